package keeper

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"

	"github.com/flopsnet/flops/x/market/types"
)

// fieldPayload returns the payload of a top-level length-delimited field of an encoding.
func fieldPayload(t *testing.T, bz []byte, field protowire.Number) ([]byte, bool) {
	t.Helper()
	for len(bz) > 0 {
		num, typ, n := protowire.ConsumeTag(bz)
		require.GreaterOrEqual(t, n, 0)
		m := protowire.ConsumeFieldValue(num, typ, bz[n:])
		require.GreaterOrEqual(t, m, 0)
		if num == field && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(bz[n:])
			return v, true
		}
		bz = bz[n+m:]
	}
	return nil, false
}

func TestCompactZeroTimestampIsWhatGogoprotoWrites(t *testing.T) {
	bz, err := (&types.Task{}).Marshal()
	require.NoError(t, err)
	for _, f := range []protowire.Number{10, 11, 17, 33} {
		v, ok := fieldPayload(t, bz, f)
		require.True(t, ok, "field %d is written when zero", f)
		require.Equal(t, zeroTimestamp, v, "field %d", f)
	}
}

// A task or a job reads back from the compact encoding as it reads back from the full one,
// whatever its fields; a pending task is 59 bytes shorter, a job 41 (its blank spec).
func TestCompactValuesReadBackAsWritten(t *testing.T) {
	cdc := codec.NewProtoCodec(codectypes.NewInterfaceRegistry())
	fullTask := codec.CollValue[types.Task](cdc)
	compactTask := newCompactValue(fullTask, taskOmit)
	fullJob := codec.CollValue[types.Job](cdc)
	compactJob := newCompactValue(fullJob, jobOmit)

	r := rand.New(rand.NewPCG(1, 2))
	tm := func() time.Time {
		if r.IntN(2) == 0 {
			return time.Time{}
		}
		return time.Unix(r.Int64N(11e10)-1e10, r.Int64N(1e9)).UTC()
	}
	amount := func() sdkmath.Int { return sdkmath.NewIntFromUint64(r.Uint64()) }
	str := func(n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	for i := 0; i < 500; i++ {
		task := types.Task{
			Id: r.Uint64(), JobId: r.Uint64(), Status: types.TaskStatus(r.Int32N(11)),
			Price: amount(), Paid: amount(), Reserved: amount(), Exposure: amount(),
			StartedTime: tm(), RunDeadline: tm(), CommitTime: tm(), Deadline: tm(), PendingHeight: r.Int64(),
		}
		if r.IntN(2) == 0 {
			task.Checkpoint = types.Checkpoint{Sha256: str(64), Height: r.Int64()}
		}
		if r.IntN(2) == 0 {
			task.Usage = types.Usage{GpuSeconds: r.Uint64(), GpuUuids: []string{str(8)}}
		}
		if r.IntN(2) == 0 {
			task.Failures = []types.FailureReport{{}}
		}
		full, err := fullTask.Encode(task)
		require.NoError(t, err)
		short, err := compactTask.Encode(task)
		require.NoError(t, err)
		require.LessOrEqual(t, len(short), len(full))
		a, err := compactTask.Decode(full)
		require.NoError(t, err)
		b, err := compactTask.Decode(short)
		require.NoError(t, err)
		require.Equal(t, a, b)
		again, err := fullTask.Encode(b)
		require.NoError(t, err)
		require.Equal(t, full, again, "the compact value decodes to the value written")

		job := types.Job{
			Id: r.Uint64(), Owner: str(45), Escrow: amount(), ClearingPrice: amount(), VerificationLeft: amount(), SubmittedTime: tm(),
		}
		full, err = fullJob.Encode(job)
		require.NoError(t, err)
		short, err = compactJob.Encode(job)
		require.NoError(t, err)
		gotJob, err := compactJob.Decode(short)
		require.NoError(t, err)
		again, err = fullJob.Encode(gotJob)
		require.NoError(t, err)
		require.Equal(t, full, again)
	}

	pending := types.Task{Id: 5000, JobId: 1234, Status: types.TASK_STATUS_PENDING, Role: types.TASK_ROLE_PRIMARY,
		Price: sdkmath.ZeroInt(), Exposure: sdkmath.ZeroInt(), Paid: sdkmath.ZeroInt(), Reserved: sdkmath.NewInt(100000), PendingHeight: 100}
	full, err := fullTask.Encode(pending)
	require.NoError(t, err)
	short, err := compactTask.Encode(pending)
	require.NoError(t, err)
	require.Equal(t, 59, len(full)-len(short), "a pending task's zero timestamps and empty messages")

	job := types.Job{Id: 1, Owner: "o", Spec: types.JobSpec{Image: "img", TaskCount: 3}, Escrow: sdkmath.OneInt(), ClearingPrice: sdkmath.ZeroInt(),
		VerificationLeft: sdkmath.ZeroInt(), SubmittedTime: time.Unix(1_700_000_000, 0).UTC()}
	short, err = compactJob.Encode(job)
	require.NoError(t, err)
	got, err := compactJob.Decode(short)
	require.NoError(t, err)
	require.Equal(t, types.JobSpec{}, got.Spec, "a job's record never holds its spec")
	job.Spec = types.JobSpec{}
	full, err = fullJob.Encode(job)
	require.NoError(t, err)
	require.Equal(t, 41, len(full)-len(short), "the blank spec")
}

func TestGroupValueCodecRoundTrips(t *testing.T) {
	c := newGroupValueCodec()
	for _, v := range []groupValue{
		collections.Join4(uint64(1), uint64(5000), int64(0), uint32(0)),
		collections.Join4(uint64(math.MaxUint64), uint64(math.MaxUint64), int64(math.MaxInt64), uint32(math.MaxUint32)),
		collections.Join4(uint64(0), uint64(0), int64(math.MinInt64), uint32(7)),
	} {
		bz, err := c.Encode(v)
		require.NoError(t, err)
		got, err := c.Decode(bz)
		require.NoError(t, err)
		require.Equal(t, v, got)
		_, err = c.Decode(append(bz, 0))
		require.Error(t, err, "trailing bytes")
		_, err = c.Decode(bz[:len(bz)-1])
		require.Error(t, err, "cut short")
	}
	bz, err := c.Encode(collections.Join4(uint64(1), uint64(5000), int64(0), uint32(0)))
	require.NoError(t, err)
	require.Len(t, bz, 5, "a one-task group's record (the tuple was 28 bytes)")
}
