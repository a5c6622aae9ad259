"""Real services for the tests and the benchmarks (both may import it; it imports only `pipelines`)."""
