-- kept_table_note: note that the table $name was built from all history now, and is kept from here.
DELETE FROM kept_tables WHERE table_name = $name;
INSERT INTO kept_tables VALUES ($name, now());
