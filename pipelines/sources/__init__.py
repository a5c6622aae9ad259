"""Sources: each turns an outside format into landing-table inputs for `store.load_batch`."""
