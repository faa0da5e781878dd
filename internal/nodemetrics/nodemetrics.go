// Package nodemetrics exports what an operator of a flops node graphs, as Prometheus
// metrics: counters of what each block did, read from its events (jobs submitted and
// finished, tasks assigned, settled and failed, the udps paid for tasks, DPS emission paid,
// slashes, PoCP challenges, block-hook failures), and gauges of the latest committed state,
// read when Prometheus scrapes (jobs by status, nodes by status, schedulable nodes by GPU
// class, escrow held, collateral bonded and unbonding, the reward pool, network GFL).
//
// It observes; it never writes state. flopsd registers the app's collector with the default
// registry, which CometBFT's Prometheus listener serves ([instrumentation] in config.toml;
// the localnet turns it on at 127.0.0.1:26660 plus its port offset). The dashboard is
// docs/grafana/flops.json.
package nodemetrics

import (
	"encoding/json"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/prometheus/client_golang/prometheus"
)

const ns = "flops"

// Snapshot is the state the gauges show, read at one height.
type Snapshot struct {
	Height int64
	// Jobs counts the jobs by status name (JOB_STATUS_ACTIVE ...).
	Jobs map[string]uint64
	// EscrowUdps is what x/market holds for jobs, pools, bids and challenge bonds.
	EscrowUdps *big.Int
	// BondedUdps and UnbondingUdps are the providers' collateral (x/staking-slash).
	BondedUdps, UnbondingUdps *big.Int
	// RewardPoolUdps is the DPS reward pool (x/dps).
	RewardPoolUdps *big.Int
	// NetworkGflops is the GFL index (the ugfl supply: 1 ugfl = 1 GFLOP/s).
	NetworkGflops *big.Int
	// Nodes counts the registered nodes by status name.
	Nodes map[string]uint64
	// Schedulable counts the schedulable nodes of each GPU class: idle, loaded (the
	// scheduler's counters; classes are x/gfl's parameters, so the labels are few).
	Schedulable map[string][2]uint64
}

// Source reads a Snapshot of the latest committed state (safe while blocks are made: it
// reads through a query context, as a gRPC query does).
type Source func() (Snapshot, error)

// Metrics is the app's collector.
type Metrics struct {
	source Source

	jobsSubmitted    prometheus.Counter
	jobsFinished     *prometheus.CounterVec
	tasksAssigned    prometheus.Counter
	tasksReassigned  prometheus.Counter
	tasksSettled     prometheus.Counter
	tasksFailed      prometheus.Counter
	paid             prometheus.Counter
	assignedLast     prometheus.Gauge
	emission         *prometheus.CounterVec
	slashes          *prometheus.CounterVec
	slashed          prometheus.Counter
	challenges       *prometheus.CounterVec
	blockhookFailed  *prometheus.CounterVec
	blocks           prometheus.Counter
	snapshotFailures prometheus.Counter

	jobs       *prometheus.Desc
	nodes      *prometheus.Desc
	sched      *prometheus.Desc
	escrow     *prometheus.Desc
	bonded     *prometheus.Desc
	unbonding  *prometheus.Desc
	rewardPool *prometheus.Desc
	gflops     *prometheus.Desc
	height     *prometheus.Desc
}

// New returns the collector; source reads the gauges at scrape time.
func New(source Source) *Metrics {
	counter := func(sub, name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	vec := func(sub, name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	desc := func(sub, name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, sub, name), help, labels, nil)
	}
	return &Metrics{
		source:           source,
		jobsSubmitted:    counter("market", "jobs_submitted_total", "Jobs submitted."),
		jobsFinished:     vec("market", "jobs_finished_total", "Jobs finished, by final status.", "status"),
		tasksAssigned:    counter("market", "tasks_assigned_total", "Task replicas assigned to a node (reassignments included)."),
		tasksReassigned:  counter("market", "tasks_reassigned_total", "Task replicas taken from a node and put back in the queue."),
		tasksSettled:     counter("market", "tasks_settled_total", "Task replicas settled and paid."),
		tasksFailed:      counter("market", "tasks_failed_total", "Task replicas that ended FAILED."),
		paid:             counter("market", "task_payments_udps_total", "udps paid to providers for settled tasks (price and tip, less the market's take)."),
		assignedLast:     prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: "market", Name: "tasks_assigned_last_block", Help: "Task replicas assigned in the last block."}),
		emission:         vec("dps", "emission_paid_udps_total", "DPS emission paid from the reward pool, by kind (availability, work, ...).", "kind"),
		slashes:          vec("stakingslash", "slashes_total", "Slashes, by reason.", "reason"),
		slashed:          counter("stakingslash", "slashed_udps_total", "Collateral slashed, udps."),
		challenges:       vec("gfl", "challenges_finished_total", "PoCP challenges finished, by final status (passed, failed, expired).", "status"),
		blockhookFailed:  vec("blockhook", "item_failures_total", "Block-hook items that failed (and will be retried or parked), by module and kind.", "module", "kind"),
		blocks:           counter("", "blocks_observed_total", "Blocks this node finalized since it started."),
		snapshotFailures: counter("", "state_read_failures_total", "Scrapes whose state gauges could not be read."),
		jobs:             desc("market", "jobs", "Jobs by status.", "status"),
		nodes:            desc("gfl", "nodes", "Registered nodes by status.", "status"),
		sched:            desc("market", "schedulable_nodes", "Schedulable nodes by GPU class and load (idle: none of their GPUs in use).", "gpu_class", "load"),
		escrow:           desc("market", "escrow_udps", "udps x/market holds in escrow (jobs, pools, bids, challenge bonds)."),
		bonded:           desc("stakingslash", "collateral_bonded_udps", "Providers' bonded collateral, udps."),
		unbonding:        desc("stakingslash", "collateral_unbonding_udps", "Providers' unbonding collateral, udps."),
		rewardPool:       desc("dps", "reward_pool_udps", "The DPS reward pool, udps."),
		gflops:           desc("gfl", "network_gflops", "The GFL index: the network's verified power in GFLOP/s (1 GFL = 10^6)."),
		height:           desc("", "state_height", "The height the state gauges were read at."),
	}
}

func (m *Metrics) counters() []prometheus.Collector {
	return []prometheus.Collector{m.jobsSubmitted, m.jobsFinished, m.tasksAssigned, m.tasksReassigned, m.tasksSettled,
		m.tasksFailed, m.paid, m.assignedLast, m.emission, m.slashes, m.slashed, m.challenges, m.blockhookFailed,
		m.blocks, m.snapshotFailures}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.counters() {
		c.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{m.jobs, m.nodes, m.sched, m.escrow, m.bonded, m.unbonding, m.rewardPool, m.gflops, m.height} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the counters, and the gauges read now. It
// takes no lock that FinalizeBlock waits on: a scrape's state read never holds up a block
// (the counters are safe for concurrent use).
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	if s, err := m.source(); err != nil {
		m.snapshotFailures.Inc()
	} else {
		for _, st := range sortedKeys(s.Jobs) {
			ch <- prometheus.MustNewConstMetric(m.jobs, prometheus.GaugeValue, float64(s.Jobs[st]), st)
		}
		for _, st := range sortedKeys(s.Nodes) {
			ch <- prometheus.MustNewConstMetric(m.nodes, prometheus.GaugeValue, float64(s.Nodes[st]), st)
		}
		for _, class := range sortedKeys(s.Schedulable) {
			ch <- prometheus.MustNewConstMetric(m.sched, prometheus.GaugeValue, float64(s.Schedulable[class][0]), class, "idle")
			ch <- prometheus.MustNewConstMetric(m.sched, prometheus.GaugeValue, float64(s.Schedulable[class][1]), class, "loaded")
		}
		for d, v := range map[*prometheus.Desc]*big.Int{m.escrow: s.EscrowUdps, m.bonded: s.BondedUdps, m.unbonding: s.UnbondingUdps,
			m.rewardPool: s.RewardPoolUdps, m.gflops: s.NetworkGflops} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, toFloat(v))
		}
		ch <- prometheus.MustNewConstMetric(m.height, prometheus.GaugeValue, float64(s.Height))
	}
	for _, c := range m.counters() {
		c.Collect(ch)
	}
}

// ObserveBlock counts what a finalized block did from its events (the block's own and its
// transactions'; a failed transaction's Msg events are not in its result).
func (m *Metrics) ObserveBlock(res *abci.ResponseFinalizeBlock) {
	if res == nil {
		return
	}
	m.blocks.Inc()
	assigned := 0
	observe := func(events []abci.Event) {
		for _, e := range events {
			if m.observe(e) {
				assigned++
			}
		}
	}
	observe(res.Events)
	for _, tx := range res.TxResults {
		if tx != nil && tx.Code == 0 {
			observe(tx.Events)
		}
	}
	m.assignedLast.Set(float64(assigned))
}

// observe counts one event; it reports a task assignment.
func (m *Metrics) observe(e abci.Event) bool {
	switch e.Type {
	case "flops.market.v1.EventJobSubmitted":
		m.jobsSubmitted.Inc()
	case "flops.market.v1.EventJobFinished":
		m.jobsFinished.WithLabelValues(attr(e, "status")).Inc()
	case "flops.market.v1.EventTaskAssigned":
		m.tasksAssigned.Inc()
		return true
	case "flops.market.v1.EventTaskReassigned":
		m.tasksReassigned.Inc()
	case "flops.market.v1.EventTaskSettled":
		m.tasksSettled.Inc()
		m.paid.Add(amount(attr(e, "paid")))
	case "flops.market.v1.EventTaskStatus":
		if attr(e, "status") == "TASK_STATUS_FAILED" {
			m.tasksFailed.Inc()
		}
	case "flops.dps.v1.EventRewardPaid":
		m.emission.WithLabelValues(attr(e, "kind")).Add(amount(attr(e, "amount")))
	case "flops.stakingslash.v1.EventSlash":
		var rec struct {
			Reason string `json:"reason"`
			Amount string `json:"amount"`
		}
		if json.Unmarshal([]byte(rawAttr(e, "record")), &rec) == nil {
			m.slashes.WithLabelValues(rec.Reason).Inc()
			m.slashed.Add(amount(rec.Amount))
		}
	case "flops.gfl.v1.EventChallengeFinished":
		m.challenges.WithLabelValues(attr(e, "status")).Inc()
	case "flops.blockhook.v1.EventItemFailed":
		m.blockhookFailed.WithLabelValues(attr(e, "module"), attr(e, "kind")).Inc()
	}
	return false
}

// rawAttr is an attribute's value: typed events write each field as JSON.
func rawAttr(e abci.Event, key string) string {
	for _, a := range e.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// attr is a string or enum attribute without its JSON quotes.
func attr(e abci.Event, key string) string {
	v := rawAttr(e, key)
	if s, err := strconv.Unquote(v); err == nil {
		return s
	}
	return v
}

// amount parses an integer amount ("123" or 123) as a float for a counter.
func amount(s string) float64 {
	s = strings.Trim(s, `"`)
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 {
		return 0
	}
	return toFloat(v)
}

func toFloat(v *big.Int) float64 {
	if v == nil {
		return 0
	}
	f, _ := new(big.Float).SetInt(v).Float64()
	return f
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
