"""The graph projection: Graphiti's model on Neo4j and on FalkorDB (each store satisfying
vera_client.domain.ports.GraphStore), the job that projects PostgreSQL's facts into them,
and the local servers that run either backend."""
