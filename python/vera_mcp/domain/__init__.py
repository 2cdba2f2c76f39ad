"""MCP/HTTP domain: request and response shapes. Imports no infrastructure library."""
