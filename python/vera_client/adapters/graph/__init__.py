"""How vectors are spelled between PostgreSQL and the graph stores (vectors.py)."""
