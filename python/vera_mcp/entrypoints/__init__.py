"""Wiring the MCP server: the `vera mcp` commands."""
