"""Tests of the Python client itself: its settings, integrations, tracing spans and every query's rows."""
