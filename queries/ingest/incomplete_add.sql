-- incomplete_add: a window loaded from a partial answer, with what the store said about it.
INSERT INTO ingest_incomplete VALUES ($source, $key, $start_ts, $end_ts, $said, now())
