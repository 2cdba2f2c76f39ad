"""Graph stores: Graphiti's model on Neo4j and on FalkorDB, each satisfying domain.ports.GraphStore."""
