-- gpu_devices_replace: replace the gpu_devices rows of the GPUs in the registered frame __devices
-- (node, gpu, uuid, pci_bus_id), last seen at $seen.
DELETE FROM gpu_devices d WHERE EXISTS (SELECT 1 FROM __devices n WHERE n.node = d.node AND n.gpu = d.gpu);
INSERT INTO gpu_devices SELECT node, gpu, uuid, pci_bus_id, $seen FROM __devices;
