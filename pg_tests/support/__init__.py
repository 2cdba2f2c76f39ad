"""What the pg_tests share: the test server and databases, the seeded world, clients, writes, search
helpers, the adversary's arena and the helper servers."""
