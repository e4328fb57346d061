"""The physics of a training run: FLOPs, memory, (later) communication and step time."""
