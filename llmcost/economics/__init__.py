"""Money and days: rent vs buy, spot vs on-demand, failures and checkpoints, sizing, the run
waterfall. Pure functions over the training models; no widgets, no plotting."""
