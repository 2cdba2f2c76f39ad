"""Local graph servers: an embedded FalkorDB and Neo4j through its Java launcher, for the
tests, the demo and a deployment without a graph server of its own."""
