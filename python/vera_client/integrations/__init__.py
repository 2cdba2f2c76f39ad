"""Retrievers for agent frameworks over vera.search: LangChain (`langchain.py`, extra
`[langchain]`) and LlamaIndex (`llama_index.py`, extra `[llamaindex]`). Each is imported on its
own, so the client needs neither framework."""
