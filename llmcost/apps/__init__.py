"""ipywidgets apps, one per notebook: Scenario <-> controls <-> plots. Nothing imports this."""
