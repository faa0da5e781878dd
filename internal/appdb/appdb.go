// Package appdb opens a node's application database (data/application.db) the way
// flopsd runs it: on goleveldb with a larger memtable and larger tables than the SDK's
// defaults, on any other backend as the SDK opens it.
//
// A job submission and its assignment leave about eleven new keys in the state where a
// bank send rewrites three (x/market TestSubmissionCommittedKeys), and under a flood the
// database's background compactions took 18% of the validator's CPU in the submit-job
// phase against 5% in the bank-send phase, on the same cores as the serial ABCI path.
// goleveldb's 4 MiB memtable and 2 MiB tables flush and compact a block's writes many
// times over; at 64 MiB and 8 MiB FinalizeBlock cost 0.86-1.03 ms a submission against
// 1.11-1.37, and bank sends and submissions both went about 15% faster (tests/load,
// 12,000 senders, four ABBA pairs; the README has the figures).
package appdb

import (
	"fmt"
	"path/filepath"

	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"

	dbm "github.com/cosmos/cosmos-db"
)

const (
	// Name is the application database's name under the node's data directory, as the
	// SDK's own commands (export, rollback, prune) open it.
	Name = "application"

	// DefaultWriteBufferMiB is goleveldb's memtable size, in MiB, that flopsd opens the
	// application database with. goleveldb's own default is 4.
	DefaultWriteBufferMiB = 64
	// MaxWriteBufferMiB bounds the setting: goleveldb holds up to two memtables (the
	// one being written and the one being flushed) in memory.
	MaxWriteBufferMiB = 1024

	// compactionTableMiB is the size of the tables goleveldb's compactions write
	// (its default is 2 MiB): fewer, larger tables for a state written at this rate.
	compactionTableMiB = 8
	// bloomBitsPerKey is the filter the SDK's goleveldb opener sets too (cosmos-db's
	// NewGoLevelDB): a read of a key not in a table skips it.
	bloomBitsPerKey = 10
)

// Options tunes the application database.
type Options struct {
	// WriteBufferMiB is goleveldb's memtable size in MiB; 0 opens the database with the
	// SDK's options (goleveldb's 4 MiB memtable and 2 MiB tables). On another backend Open
	// takes only 0 and DefaultWriteBufferMiB.
	WriteBufferMiB int
}

// DefaultOptions are the options flopsd start uses unless told otherwise.
func DefaultOptions() Options { return Options{WriteBufferMiB: DefaultWriteBufferMiB} }

// Validate names a setting out of range.
func (o Options) Validate() error {
	if o.WriteBufferMiB < 0 || o.WriteBufferMiB > MaxWriteBufferMiB {
		return fmt.Errorf("application database write buffer %d MiB: must be 0 (goleveldb's default) to %d", o.WriteBufferMiB, MaxWriteBufferMiB)
	}
	return nil
}

// Open opens rootDir/data/application.db on backend with o. The files are the same
// format whatever the options, so the SDK's commands that open the database with its
// defaults read what a node wrote with these, and the other way round.
func Open(rootDir string, backend dbm.BackendType, o Options) (dbm.DB, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dir := filepath.Join(rootDir, "data")
	if backend != dbm.GoLevelDBBackend {
		// the setting is goleveldb's: its default (which app.toml always holds) and 0 open
		// the database as the SDK does; any other value was asked for and would do nothing
		if o.WriteBufferMiB != 0 && o.WriteBufferMiB != DefaultWriteBufferMiB {
			return nil, fmt.Errorf("application database write buffer %d MiB: a goleveldb setting, and the database is on %s (leave it at %d or set 0)", o.WriteBufferMiB, backend, DefaultWriteBufferMiB)
		}
		return dbm.NewDB(Name, backend, dir)
	}
	if o.WriteBufferMiB == 0 {
		return dbm.NewDB(Name, backend, dir)
	}
	return dbm.NewGoLevelDBWithOpts(Name, dir, &opt.Options{
		Filter:              filter.NewBloomFilter(bloomBitsPerKey),
		WriteBuffer:         o.WriteBufferMiB * opt.MiB,
		CompactionTableSize: compactionTableMiB * opt.MiB,
	})
}
