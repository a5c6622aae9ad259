-- insertion_order_set: keep rows in insertion order ($on) or not.
SET preserve_insertion_order = $on
