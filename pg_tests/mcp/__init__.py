"""Tests of the MCP server (vera_mcp) on the real PostgreSQL."""
