// Command emission simulates ten years of x/dps distributions with the default params
// and draws docs/emission.png: the DPS emitted, the halvings, the halving counter and
// the reward pool, with and without network growth, with and without x/market's take
// replenishing the pool (DeepSquare's Figure 1). docs/emission.md explains the figure.
//
// The emission is computed by the chain's own pure functions (x/dps/types:
// PlanDistribution, AvailabilityReward, WorkReward, EraState.AfterPayouts) and the take
// by x/market's SplitPayment; this program only supplies the inputs (network power,
// fees) and adds up the results. Floats appear only in those assumed inputs and in the
// plot.
//
//	cd scripts/emission && go run . -out ../../docs/emission.png
package main

import (
	"flag"
	"fmt"
	"image/color"
	"log"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

const (
	udpsPerDPS = 1_000_000
	ugflPerGFL = 1_000_000
)

// assumptions are the simulator's inputs; docs/emission.md states and defends them.
type assumptions struct {
	years      int
	epochDays  int
	initialGFL float64 // network power at genesis, GFL
	growth     float64 // yearly growth of the network in the growth scenarios (1 = doubles)
	poolDPS    int64   // reward pool funded at genesis, DPS
	outsideDPS int64   // udps supply outside the pool at genesis, DPS
	feesPerGFL float64 // fees clients pay per GFL of network power per day, DPS
}

type scenario struct {
	name   string
	growth bool
	market bool
	color  color.Color
	dashed bool
}

// sample is the state after one distribution.
type sample struct {
	years     float64
	emitted   float64 // DPS paid out of the pool so far
	pool      float64 // DPS
	era       float64
	counter   float64 // cumulative GFL since the last halving (net of credits), GFL
	networkGF float64 // GFL
}

type halving struct {
	years, emitted float64
	cause          types.HalvingCause
}

func simulate(p types.Params, mp markettypes.Params, a assumptions, sc scenario) ([]sample, []halving) {
	genesis := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pool := sdkmath.NewInt(a.poolDPS * udpsPerDPS)
	supply := pool.Add(sdkmath.NewInt(a.outsideDPS * udpsPerDPS))
	era := types.EraState{LastHalvingTime: genesis, CumulativeGfl: sdkmath.ZeroInt(), PoolBaseline: pool}
	emitted := sdkmath.ZeroInt()
	full := types.ReputationFactor(sdkmath.LegacyOneDec(), true) // every node and provider eligible, score 1
	epochs := a.years * 365 / a.epochDays
	var out []sample
	var halvings []halving
	for n := 1; n <= epochs; n++ {
		now := genesis.Add(time.Duration(n*a.epochDays) * 24 * time.Hour)
		years := float64(n*a.epochDays) / 365
		gflNow := a.initialGFL
		if sc.growth {
			gflNow *= math.Pow(1+a.growth, years)
		}
		g := uint64(gflNow * ugflPerGFL)

		// Clients paid fees during the epoch; x/market's take sent its pool share in.
		fees := sdkmath.ZeroInt()
		if sc.market {
			fees = sdkmath.NewInt(int64(gflNow * a.feesPerGFL * float64(a.epochDays) * udpsPerDPS))
			pool = pool.Add(markettypes.SplitPayment(fees, mp.TakeRatePpm, mp.TakePoolSharePpm).Pool)
		}

		plan := types.PlanDistribution(p, era, types.DistributionInputs{
			Epoch: uint64(n), Now: now, TotalGFL: g, Pool: pool, Supply: supply,
		})
		d := plan.Distribution
		// Availability: the whole network is one eligible operator, so the only loss is
		// truncation. Work: one provider holds all the epoch's work (weight 1 of 1) and
		// earned all the fees; without a market there is no work and E_work stays.
		paid := types.AvailabilityReward(d.Availability, g, g, full)
		paid = paid.Add(types.WorkReward(d.Work, sdkmath.OneInt(), sdkmath.OneInt(), fees, p.WorkRewardCapPpm, full))
		pool = pool.Sub(paid)
		era = plan.Era.AfterPayouts(paid)
		emitted = emitted.Add(paid)

		if d.Halving != types.HALVING_CAUSE_UNSPECIFIED {
			halvings = append(halvings, halving{years: years, emitted: dps(emitted), cause: d.Halving})
		}
		out = append(out, sample{
			years: years, emitted: dps(emitted), pool: dps(pool), era: float64(era.Era),
			counter: float64(era.CumulativeGfl.Int64()) / ugflPerGFL, networkGF: gflNow,
		})
	}
	return out, halvings
}

func dps(v sdkmath.Int) float64 {
	q := v.QuoRaw(udpsPerDPS)
	return float64(q.Int64()) + float64(v.Sub(q.MulRaw(udpsPerDPS)).Int64())/udpsPerDPS
}

func main() {
	a := assumptions{}
	out := flag.String("out", "../../docs/emission.png", "PNG to write")
	flag.IntVar(&a.years, "years", 10, "years simulated")
	flag.IntVar(&a.epochDays, "epoch-days", 1, "epoch length in days (the chain's default epoch is 15 days)")
	flag.Float64Var(&a.initialGFL, "initial-gfl", 100, "network power at genesis, GFL (1 GFL = 1 PFLOP/s)")
	flag.Float64Var(&a.growth, "growth", 1, "yearly network growth in the growth scenarios (1 = doubles every year)")
	flag.Int64Var(&a.poolDPS, "pool", 10_000, "reward pool funded at genesis, DPS")
	flag.Int64Var(&a.outsideDPS, "outside", 1_000_000, "DPS outside the pool at genesis")
	flag.Float64Var(&a.feesPerGFL, "fees-per-gfl", 0.3, "fees clients pay per GFL of network power per day, DPS")
	flag.Parse()

	p := types.DefaultParams()
	mp := markettypes.DefaultParams()
	scenarios := []scenario{
		{name: "flat, take replenishes", market: true, color: color.RGBA{B: 200, A: 255}},
		{name: "growing, take replenishes", growth: true, market: true, color: color.RGBA{R: 200, A: 255}},
		{name: "flat, no replenishment", color: color.RGBA{B: 200, A: 255}, dashed: true},
		{name: "growing, no replenishment", growth: true, color: color.RGBA{R: 200, A: 255}, dashed: true},
	}

	emittedP := newPlot(fmt.Sprintf("x/dps emission, default params, %d-day epochs (halvings: dot by time, ring by threshold)", a.epochDays), "cumulative DPS paid from the pool")
	eraP := newPlot("", "halving era h")
	counterP := newPlot("", "GFL counted toward the next halving")
	poolP := newPlot("", "reward pool, DPS (log)")
	poolP.Y.Scale = plot.LogScale{}
	poolP.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	poolP.X.Label.Text = "years since genesis"

	fmt.Printf("assumptions: %+v\nparams: share %d ppm, R0 %s DPS/GFL, threshold %s ugfl, period %s, availability %d ppm, work cap %d ppm; market take %d ppm, pool share %d ppm\n",
		a, p.EmissionSharePpm, p.DpsPerGfl, p.HalvingThreshold, p.HalvingPeriod, p.AvailabilitySharePpm, p.WorkRewardCapPpm, mp.TakeRatePpm, mp.TakePoolSharePpm)
	for _, sc := range scenarios {
		samples, halvings := simulate(p, mp, a, sc)
		addLine(emittedP, sc, samples, func(s sample) float64 { return s.emitted }, true)
		addLine(eraP, sc, samples, func(s sample) float64 { return s.era }, false)
		if !sc.dashed || !sc.growth { // the runaway sawtooth would hide the others
			addLine(counterP, sc, samples, func(s sample) float64 { return s.counter }, false)
		}
		addLine(poolP, sc, samples, func(s sample) float64 { return s.pool }, false)
		if !sc.dashed {
			markHalvings(emittedP, sc, halvings)
		}
		summary(sc, samples, halvings, a)
	}
	threshold, err := plotter.NewLine(plotter.XYs{{X: 0, Y: gflOf(p.HalvingThreshold)}, {X: float64(a.years), Y: gflOf(p.HalvingThreshold)}})
	check(err)
	threshold.Color = color.Gray{Y: 90}
	threshold.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	counterP.Add(threshold)
	counterP.Legend.Add("halving_threshold", threshold)
	counterP.Legend.Left = false
	counterP.Legend.Top = false
	counterP.Legend.YOffs = vg.Points(30)
	eraP.Y.Max = 25 // the runaway scenarios leave the chart; the summary prints them
	for _, pl := range []*plot.Plot{emittedP, eraP, counterP, poolP} {
		pl.X.Min, pl.X.Max = 0, float64(a.years)
		pl.X.Tick.Marker = yearTicks(a.years)
	}

	render(*out, [][]*plot.Plot{{emittedP}, {eraP}, {counterP}, {poolP}})
	fmt.Println("wrote", *out)
}

func gflOf(v sdkmath.Int) float64 { return float64(v.Int64()) / ugflPerGFL }

func newPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

func addLine(p *plot.Plot, sc scenario, samples []sample, y func(sample) float64, legend bool) {
	pts := make(plotter.XYs, 0, len(samples))
	for _, s := range samples {
		v := y(s)
		if p.Y.Scale != nil {
			if _, log := p.Y.Scale.(plot.LogScale); log && v <= 0 {
				continue
			}
		}
		pts = append(pts, plotter.XY{X: s.years, Y: v})
	}
	l, err := plotter.NewLine(pts)
	check(err)
	l.Color = sc.color
	l.Width = vg.Points(1.5)
	if sc.dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	if legend {
		p.Legend.Add(sc.name, l)
	}
}

// markHalvings marks the halvings on the emission curve: filled by time, rings by
// threshold; at most one mark per 30 days so that a run of halvings stays readable.
func markHalvings(p *plot.Plot, sc scenario, halvings []halving) {
	var byTime, byThreshold plotter.XYs
	last := -1.0
	for _, h := range halvings {
		if last >= 0 && h.years-last < 30.0/365 {
			continue
		}
		last = h.years
		if h.cause == types.HALVING_CAUSE_TIME {
			byTime = append(byTime, plotter.XY{X: h.years, Y: h.emitted})
		} else {
			byThreshold = append(byThreshold, plotter.XY{X: h.years, Y: h.emitted})
		}
	}
	for _, m := range []struct {
		pts   plotter.XYs
		shape draw.GlyphDrawer
	}{{byTime, draw.CircleGlyph{}}, {byThreshold, draw.RingGlyph{}}} {
		if len(m.pts) == 0 {
			continue
		}
		sct, err := plotter.NewScatter(m.pts)
		check(err)
		sct.GlyphStyle = draw.GlyphStyle{Color: sc.color, Radius: vg.Points(3.5), Shape: m.shape}
		p.Add(sct)
	}
}

func yearTicks(years int) plot.ConstantTicks {
	ticks := make(plot.ConstantTicks, 0, years+1)
	for y := 0; y <= years; y++ {
		ticks = append(ticks, plot.Tick{Value: float64(y), Label: fmt.Sprint(y)})
	}
	return ticks
}

// summary prints one line per year and scenario, for docs/emission.md.
func summary(sc scenario, samples []sample, halvings []halving, a assumptions) {
	byTime, byThreshold := 0, 0
	for _, h := range halvings {
		if h.cause == types.HALVING_CAUSE_TIME {
			byTime++
		} else {
			byThreshold++
		}
	}
	fmt.Printf("\n%s: %d halvings (%d by time, %d by threshold)\n", sc.name, len(halvings), byTime, byThreshold)
	fmt.Println("  year   network GFL   era   DPS emitted   pool DPS")
	perYear := 365 / a.epochDays
	for y := 1; y <= a.years; y++ {
		s := samples[y*perYear-1]
		fmt.Printf("  %4d  %12.0f  %4.0f  %12.2f  %12.2f\n", y, s.networkGF, s.era, s.emitted, s.pool)
	}
}

func render(path string, plots [][]*plot.Plot) {
	img := vgimg.NewWith(vgimg.UseWH(10*vg.Inch, 14*vg.Inch), vgimg.UseDPI(110))
	dc := draw.New(img)
	tiles := draw.Tiles{
		Rows: len(plots), Cols: 1,
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(10), PadY: vg.Points(12),
	}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		plots[j][0].Draw(canvases[j][0])
	}
	f, err := os.Create(path)
	check(err)
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	check(err)
	check(f.Close())
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
