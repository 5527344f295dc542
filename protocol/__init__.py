"""protocol: the Kafka wire codec shared by every part of fencer (sans-IO: bytes in, messages out)."""
