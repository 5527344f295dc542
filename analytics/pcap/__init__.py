"""Kafka exchanges from pcap and pcapng files of real clusters, in pure Python (no Spark here).

Purpose: the analytics job reads tcpdump captures as well as fencer's own; this package streams a
file into the same exchanges (`PcapExchange`, an `Exchange` plus the server's address), counts of
the traffic it does not decode (`Other`) and what it could not read (`Problem`). The Spark side
(analytics/read.py, pipeline.py) calls `read_pcap` in an executor task per file.

Rules:
- Layers, one module each: files.py (pcap / pcapng records, with dpkt), packets.py (link, IP and
  TCP headers), reader.py (a file's connections, the API), streams.py (TCP reassembly and Kafka
  framing of one direction), connections.py (pairing responses with requests), frames.py (Kafka's
  frame layout), items.py (what is yielded), kafka_apis.py (API names).
- Pure Python over the standard library, dpkt and `protocol`: importable and testable without Spark.
"""

from .items import DEFAULT_KAFKA_PORTS, KIND_KAFKA, KIND_NOT_KAFKA, KIND_TLS, Other, PcapExchange, Problem
from .kafka_apis import kafka_api_name
from .reader import PcapReader, read_pcap

__all__ = [
    "DEFAULT_KAFKA_PORTS",
    "KIND_KAFKA",
    "KIND_NOT_KAFKA",
    "KIND_TLS",
    "Other",
    "PcapExchange",
    "PcapReader",
    "Problem",
    "kafka_api_name",
    "read_pcap",
]
