"""The Slack connector (Web API): a channel's messages from the cursor's ts by
`conversations.history`, the replies of its threads by `conversations.replies`
(connector.py), each message a passage; tier 4 (unverified: what a model
extracts from them are proposals) by default."""
