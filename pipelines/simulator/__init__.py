"""The fleet simulator: see `pipelines.simulate` for the public API and the data it produces."""
