"""The fleet's trio shell around the pure model: connections to the controller, the brokers'
listeners, the fault driver, the admin client, the capture and the journal (architecture.md); with
`--quorum`, the fleet's own controllers, their proxies and their faults."""
