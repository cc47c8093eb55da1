"""Data rules (HL2xx): input pipelines that stall or deadlock the consumer."""
