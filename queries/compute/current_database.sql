-- current_database: the catalog name of the open database (temp views read its tables by it).
SELECT current_database()
