package keeper

import (
	"context"
	"fmt"

	"github.com/flopsnet/flops/x/market/types"
)

// A job's program: its spec's command, environment, inputs and task arguments. Nothing of
// the state machine reads them after the submission checked them; the worker reads them
// through the queries. They are most of a large spec (the maximal legal job's 310,510
// bytes, of which 3,637 are the rest), and the scheduler reads the spec (JobSpecs) at
// each examination of a job, charged to the block's assign budget: a job with more than
// programApartBytes of program keeps it apart, in JobPrograms, and the scheduler reads
// the rest only (TestAttackHugeJobSpecTaxesTheScheduler). A smaller program stays in
// the spec, so that a submission writes no key more for it.

// programApartBytes is the size of program (encoded) above which a job keeps it apart.
const programApartBytes = 1024

// jobProgram is a spec's program (the rest of the spec empty).
func jobProgram(s types.JobSpec) types.JobSpec {
	return types.JobSpec{Command: s.Command, Env: s.Env, Inputs: s.Inputs, TaskArgs: s.TaskArgs}
}

// withoutProgram is a spec without its program.
func withoutProgram(s types.JobSpec) types.JobSpec {
	s.Command, s.Env, s.Inputs, s.TaskArgs = nil, nil, nil, nil
	return s
}

// setJobSpec stores a job's spec (its submission, a genesis, the store migration): whole
// in JobSpecs, or with more than programApartBytes of program, its program in JobPrograms
// and the rest in JobSpecs. It sets job.ProgramApart to say which; the job's record is
// the caller's to write.
func (k Keeper) setJobSpec(ctx context.Context, job *types.Job, spec types.JobSpec) error {
	job.ProgramApart = programApart(spec)
	if !job.ProgramApart {
		return k.JobSpecs.Set(ctx, job.Id, spec)
	}
	if err := k.JobPrograms.Set(ctx, job.Id, jobProgram(spec)); err != nil {
		return err
	}
	return k.JobSpecs.Set(ctx, job.Id, withoutProgram(spec))
}

// programApart says whether a spec's program is more than programApartBytes, and kept
// apart.
func programApart(s types.JobSpec) bool {
	return programSize(s) > programApartBytes
}

// wholeSpec is the spec of a job's record (read without it) with its program (the
// queries, the genesis): JobSpecs, joined with the program kept apart.
func (k Keeper) wholeSpec(ctx context.Context, j types.Job) (types.JobSpec, error) {
	s, err := k.JobSpecs.Get(ctx, j.Id)
	if err != nil || !j.ProgramApart {
		if err != nil {
			err = fmt.Errorf("market: spec of job %d: %w", j.Id, err)
		}
		return s, err
	}
	p, err := k.JobPrograms.Get(ctx, j.Id)
	if err != nil {
		return s, fmt.Errorf("market: program of job %d: %w", j.Id, err)
	}
	s.Command, s.Env, s.Inputs, s.TaskArgs = p.Command, p.Env, p.Inputs, p.TaskArgs
	return s, nil
}
