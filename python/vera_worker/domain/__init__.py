"""Worker domain: job names and payloads. Imports no infrastructure library."""
