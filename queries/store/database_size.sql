-- database_size: the block size and blocks in use of the attached database $name (NULL: the open
-- one), to tell a file cut short from a whole one.
SELECT block_size, used_blocks
FROM pragma_database_size()
WHERE database_name = coalesce($name, current_database())
