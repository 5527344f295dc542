"""The metadata log's on-disk format: record batches v2, metadata records, control records.

`batch` reads record batches (CRC-32C, no compression) and `batch_writer` writes them;
`metadata` describes the metadata record types and `metadata_value` frames their values;
`control` describes the KRaft control records. Pure bytes in, data out: no files, no clock.
"""
