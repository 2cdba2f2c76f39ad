package org.vera.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.SettingImpl;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Transaction;
import org.neo4j.graphdb.config.Setting;

/**
 * Runs Neo4j 5.26 Community in this JVM with only its Bolt connector, on 127.0.0.1.
 *
 * <pre>java -jar neo4j-launcher.jar --port PORT --data DIR [--pagecache SIZE]</pre>
 *
 * DIR is Neo4j's home: the store lands in DIR/data, Neo4j's own logs in DIR/logs.
 * Authentication is off unless the environment variable NEO4J_LAUNCHER_PASSWORD is set,
 * in which case the user neo4j gets that password (the environment, not an argument:
 * arguments are visible to every local user in the process list).
 *
 * On standard output it prints "neo4j-launcher starting" first, then "neo4j-launcher ready
 * bolt://127.0.0.1:PORT" once the default database is available; on SIGTERM (or SIGINT)
 * the databases shut down cleanly and the process exits.
 */
public final class Launcher {
    static final String STARTING_LINE = "neo4j-launcher starting";
    static final String READY_PREFIX = "neo4j-launcher ready ";
    static final String PASSWORD_VARIABLE = "NEO4J_LAUNCHER_PASSWORD";
    private static final int USAGE = 2;
    private static final long AVAILABLE_TIMEOUT_SECONDS = 300;

    private Launcher() {}

    /** The launcher's arguments, checked. */
    record Options(int port, Path home, String pageCache) {
        static Options parse(String[] args) {
            Integer port = null;
            Path home = null;
            String pageCache = "256m";
            for (int i = 0; i < args.length; i++) {
                String name = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(name + " needs a value");
                }
                String value = args[++i];
                switch (name) {
                    case "--port" -> port = parsePort(value);
                    case "--data" -> home = Path.of(value).toAbsolutePath();
                    case "--pagecache" -> pageCache = value;
                    default -> throw new IllegalArgumentException("unknown argument " + name);
                }
            }
            if (port == null || home == null) {
                throw new IllegalArgumentException("--port and --data are required");
            }
            return new Options(port, home, pageCache);
        }

        private static int parsePort(String value) {
            final int port;
            try {
                port = Integer.parseInt(value);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--port must be a number, not " + value);
            }
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("--port must be between 1 and 65535, not " + port);
            }
            return port;
        }
    }

    public static void main(String[] args) throws Exception {
        final Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("neo4j-launcher: " + e.getMessage());
            System.err.println("usage: java -jar neo4j-launcher.jar --port PORT --data DIR [--pagecache SIZE]");
            System.exit(USAGE);
            return;
        }
        // the Python side reads readiness as "a ready line after the last starting line" of the log
        System.out.println(STARTING_LINE);
        System.out.flush();
        Files.createDirectories(options.home());
        String password = System.getenv(PASSWORD_VARIABLE);
        boolean authenticated = password != null && !password.isEmpty();

        Map<Setting<?>, Object> config = new HashMap<>();
        put(config, BoltConnector.enabled, "true");
        put(config, BoltConnector.listen_address, "127.0.0.1:" + options.port());
        put(config, BoltConnector.advertised_address, "127.0.0.1:" + options.port());
        put(config, BoltConnector.encryption_level, "DISABLED");
        put(config, GraphDatabaseSettings.auth_enabled, Boolean.toString(authenticated));
        // a modest cache: the machine is shared with PostgreSQL and the tests
        put(config, GraphDatabaseSettings.pagecache_memory, options.pageCache());
        // a projection can be rebuilt from PostgreSQL: keep little transaction log
        put(config, GraphDatabaseSettings.keep_logical_logs, "100M size");
        // Bolt waits 5 s for idle connections and 5 s for its threads when it stops, even with
        // none open: 1 s each keeps a stop (every test session ends with one) near 2 s, not 12
        put(config, BoltConnectorInternalSettings.connection_shutdown_wait_time, "1s");
        put(config, BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, "1s");

        DatabaseManagementService service = new DatabaseManagementServiceBuilder(options.home())
                .setConfig(config)
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            service.shutdown();
            System.out.println("neo4j-launcher stopped");
            System.out.flush();
            stopped.countDown();
        }, "neo4j-launcher-shutdown"));

        GraphDatabaseService database = service.database("neo4j");
        if (!database.isAvailable(TimeUnit.SECONDS.toMillis(AVAILABLE_TIMEOUT_SECONDS))) {
            System.err.println("neo4j-launcher: the database did not become available");
            System.exit(1);
        }
        if (authenticated) {
            setPassword(service, password);
        }
        warmUp(database);
        System.out.println(READY_PREFIX + "bolt://127.0.0.1:" + options.port());
        System.out.flush();
        stopped.await();
    }

    /**
     * The first queries of a fresh JVM compile Cypher's planner and runtime for seconds; paying
     * that before the ready line lets it overlap whatever the caller does while Neo4j starts.
     * The writes are rolled back: nothing is left in the store.
     */
    private static void warmUp(GraphDatabaseService database) {
        try (Transaction tx = database.beginTx()) {
            tx.execute("UNWIND range(1, 50) AS i "
                    + "MERGE (a:LauncherWarmUp {id: i}) MERGE (b:LauncherWarmUp {id: i + 1}) "
                    + "MERGE (a)-[r:WARMS {id: i}]->(b) SET r.valid_at = datetime()").close();
            tx.execute("MATCH p = (a:LauncherWarmUp {id: $id})-[*1..3]-(b) "
                    + "WHERE all(r IN relationships(p) WHERE r.valid_at <= datetime()) "
                    + "RETURN count(p)", Map.of("id", 1)).close();
            tx.rollback();
        }
    }

    /** A setting from its text form, parsed as neo4j.conf would parse it. */
    @SuppressWarnings("unchecked")
    private static <T> void put(Map<Setting<?>, Object> config, Setting<T> setting, String value) {
        config.put(setting, ((SettingImpl<T>) setting).parse(value));
    }

    private static void setPassword(DatabaseManagementService service, String password) {
        try {
            service.database("system").executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        } catch (RuntimeException e) {
            // a restart with the same password: Neo4j refuses to "change" it to itself
            String message = String.valueOf(e.getMessage());
            if (!message.contains("cannot be the same")) {
                throw e;
            }
        }
    }
}
