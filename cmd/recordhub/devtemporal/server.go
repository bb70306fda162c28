package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	clusterName = "active"
	storeName   = "sqlite-default"
)

// sqliteConfig is the persistence config for the database file at path.
func sqliteConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		// Keys other than SQLite's URI parameters become PRAGMAs, by their
		// plain names (the "_journal_mode" spelling of older releases is wrong
		// for the modernc driver).
		ConnectAttributes: map[string]string{
			"mode": "rwc",
			// WAL with synchronous=NORMAL fsyncs at checkpoints rather than at
			// every commit: a crash of this process loses nothing (committed
			// transactions are in the WAL file, which the OS already has), an
			// OS crash or power cut can lose the last commits. That is the
			// trade-off of a dev server; it roughly doubled workflow throughput
			// here (about 52/s with FULL, 70-75/s with NORMAL). Production
			// points TEMPORAL_ADDRESS at a real cluster instead.
			"journal_mode": "wal",
			"synchronous":  "NORMAL",
		},
		// One connection, shared by all four services in this process: more
		// gave thousands of SQLITE_BUSY errors and lower throughput.
		MaxConns:     1,
		MaxIdleConns: 1,
	}
}

// prepareDatabase creates the schema when the database file is new, and the
// namespace when it does not exist yet (an existing one is left as it is;
// awaitFrontend brings its retention up to date).
func prepareDatabase(sqlCfg *config.SQL, namespace string, retention time.Duration) error {
	_, err := os.Stat(sqlCfg.DatabaseName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := sqliteschema.SetupSchema(sqlCfg); err != nil {
			// Leave no half-made file behind: the next start would take it
			// for a complete database.
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(sqlCfg.DatabaseName + suffix)
			}
			return fmt.Errorf("create temporal schema in %s: %w", sqlCfg.DatabaseName, err)
		}
	case err != nil:
		return fmt.Errorf("temporal database: %w", err)
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return fmt.Errorf("temporal namespace %q: %w", namespace, err)
	}
	// NewNamespaceConfig sets 24 hours.
	ns.Detail.Config.Retention = durationpb.New(retention)
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return fmt.Errorf("register temporal namespace %q: %w", namespace, err)
	}
	return nil
}

// newTemporalServer configures a single-node server on loopback: the
// frontend on frontendPort, history, matching and the system worker on free
// ports, found through static hosts instead of ringpop membership.
func newTemporalServer(sqlCfg *config.SQL, frontendPort int, log serverLogger) (temporal.Server, error) {
	ports := map[primitives.ServiceName]int{primitives.FrontendService: frontendPort}
	for _, svc := range []primitives.ServiceName{primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		port, err := internalPort()
		if err != nil {
			return nil, err
		}
		ports[svc] = port
	}
	services := make(map[string]config.Service, len(ports))
	hosts := make(map[primitives.ServiceName]static.Hosts, len(ports))
	for svc, port := range ports {
		services[string(svc)] = config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: "127.0.0.1"}}
		hosts[svc] = static.SingleLocalHost(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	frontendAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(frontendPort))

	conf := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"},
		},
		Persistence: config.Persistence{
			DefaultStore:     storeName,
			VisibilityStore:  storeName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{storeName: {SQL: sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
		// The system worker dials the frontend through this.
		PublicClient: config.PublicClient{HostPort: frontendAddr},
	}

	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(log),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("configure temporal server: %w", err)
	}
	return srv, nil
}

// dynamicConfig tunes the server for one host and one SQLite connection;
// each value was measured to matter for delivery throughput or memory.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// One partition per task queue: more only help with several matching
		// hosts, and here they spread the few pollers thin.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The default keeps far more mutable states in memory than a dev
		// server needs (8096 cost about 240 MB at 10,000 workflows).
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 1000,
		// Task-queue fairness: tasks carry their tenant as fairness key
		// (workflows.startOptions), and matching dispatches keys in turn
		// rather than first come, first served, so that one tenant's
		// backlog does not hold up another's deliveries.
		dynamicconfig.MatchingEnableFairness.Key(): true,
		// The visibility queue is read at most twice a second, a thousand
		// tasks at a time, rather than at once: a workflow's start record
		// is written only if the workflow is still running when its task is
		// read, and most deliveries have closed by then, so one visibility
		// write of two is skipped (and the close inserts a row rather than
		// replacing one). The Web UI shows a workflow up to half a second
		// later. With the trimmed indexes (visibility.go), this is what
		// the bench README's "Where a delivery's cost goes" measures.
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): 2,
		dynamicconfig.VisibilityTaskBatchSize.Key():       1000,
		// Not system.forceSearchAttributesCacheRefreshOnRead: a test setting
		// that costs 10-15 % of throughput.
	}
}

// awaitFrontend waits until the frontend describes namespace, then sets the
// namespace's retention to retention if it differs (the database may come
// from a run with another RECORDHUB_TEMPORAL_RETENTION).
func awaitFrontend(ctx context.Context, address, namespace string, retention time.Duration, log, serverLog *slog.Logger) error {
	c, desc, err := dialFrontend(ctx, address, namespace, serverLog)
	if err != nil {
		return err
	}
	defer c.Close()

	current := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	if current == retention {
		return nil
	}
	_, err = c.WorkflowService().UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: namespace,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	})
	if err != nil {
		return fmt.Errorf("set retention of temporal namespace %q to %s: %w", namespace, retention, err)
	}
	log.Info("embedded temporal: namespace retention changed", "namespace", namespace, "from", current, "to", retention)
	return nil
}

// dialFrontend retries until the frontend answers DescribeNamespace or ctx
// ends. Start returns once the services run, but the frontend may still be
// loading namespaces.
func dialFrontend(ctx context.Context, address, namespace string, serverLog *slog.Logger) (client.Client, *workflowservice.DescribeNamespaceResponse, error) {
	var lastErr error
	for {
		c, err := client.DialContext(ctx, client.Options{
			HostPort:  address,
			Namespace: namespace,
			Logger:    sdklog.NewStructuredLogger(serverLog),
		})
		if err == nil {
			var desc *workflowservice.DescribeNamespaceResponse
			desc, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
			if err == nil {
				return c, desc, nil
			}
			c.Close()
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("embedded temporal at %s did not answer for namespace %q before the start deadline: %w", address, namespace, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startAttempts is how many times startTemporal builds the server when a
// gRPC listener cannot be opened: the internal services' ports were free
// a moment before, and another process may have taken one since.
const startAttempts = 3

// startTemporal builds and starts the server. A Fatal the server logs
// while it starts (a listener it could not open) comes back as an error,
// after new internal ports were tried startAttempts times in all.
func startTemporal(sqlCfg *config.SQL, frontendPort int, log *slog.Logger) (temporal.Server, error) {
	var err error
	for range startAttempts {
		var srv temporal.Server
		if srv, err = startOnce(sqlCfg, frontendPort, log); err == nil {
			return srv, nil
		}
		var fatal fatalError
		if !errors.As(err, &fatal) {
			return nil, err
		}
		log.Warn("temporal server could not start; trying other internal ports", "error", err)
	}
	return nil, err
}

// startOnce builds and starts the server once; the server's Fatal, while
// it starts, panics with a fatalError, recovered here into the error.
func startOnce(sqlCfg *config.SQL, frontendPort int, log *slog.Logger) (srv temporal.Server, err error) {
	starting := &atomic.Bool{}
	starting.Store(true)
	defer starting.Store(false)
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fatal, ok := r.(fatalError)
		if !ok {
			panic(r)
		}
		if srv != nil {
			_ = srv.Stop()
		}
		srv, err = nil, fmt.Errorf("start temporal server: %w", fatal)
	}()
	srv, err = newTemporalServer(sqlCfg, frontendPort, serverLogger{log: log, starting: starting})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	return srv, nil
}
