-- stored_pci_map: each PCI bus id of $node with the GPU index and UUID the Prometheus ingest last
-- saw at it (a kernel log names GPUs by bus id).
SELECT pci_bus_id, gpu, uuid
FROM gpu_devices
WHERE node = $node AND pci_bus_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY pci_bus_id ORDER BY last_seen_ts DESC) = 1
