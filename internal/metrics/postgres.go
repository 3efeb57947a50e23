package metrics

import "github.com/prometheus/client_golang/prometheus"

// PostgresReplication registers enrichq_postgres_synchronous_replication on
// reg, set to 1 when Postgres keeps every commit on a synchronous standby
// (read at start), else 0.
func PostgresReplication(reg prometheus.Registerer, synchronous bool) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "enrichq_postgres_synchronous_replication",
		Help: "1 when Postgres acknowledged commits only once a synchronous standby had them (synchronous_commit not off or local, synchronous_standby_names set), read at start; else 0: a failover can lose committed ledger lines.",
	})
	if synchronous {
		g.Set(1)
	}
	reg.MustRegister(g)
}
