"""What every hosted model provider goes through: the resilience chain, metering,
and the JSON-over-HTTP client that joins them."""
