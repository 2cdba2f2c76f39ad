"""The Jira connector (Cloud REST API v3): a project's issues by JQL through the
enhanced search (`/rest/api/3/search/jql`, nextPageToken pagination), their
fields made claims by a fixed, documented mapping with their history from the
changelog (mapping.py), description and comments (Atlassian Document Format,
adf.py) made passages; tier 2 by default."""
