package keeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"cosmossdk.io/collections"
)

// memberChunk is the number of class positions one MemberChunks key holds (8 bytes of node
// id each: 128 bytes). A draw reads one random position of a class, and at one key a
// position a network of 100,000 nodes gave it 100,000 keys to miss IAVL's fast-node cache
// on (100,000 entries, shared with the slots the draw reads next): packed, the class's
// keys are 1/16 as many and stay cached. A read pays for the whole chunk's bytes (3 gas a
// byte: 384 gas), and a member that joins or leaves rewrites one or two chunks, which is
// rare next to the draws.
const memberChunk = 16

// memberKey is the chunk that holds position pos of a class, and pos's offset in it.
func memberKey(class string, pos uint64) (collections.Pair[string, uint64], int) {
	return collections.Join(class, pos/memberChunk), int(pos%memberChunk) * 8
}

// memberAt is the node at position pos of a class.
func (k Keeper) memberAt(ctx context.Context, class string, pos uint64) (uint64, error) {
	key, off := memberKey(class, pos)
	chunk, err := k.MemberChunks.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("market: member %d of class %q: %w", pos, class, err)
	}
	if off+8 > len(chunk) {
		return 0, fmt.Errorf("market: member %d of class %q: chunk of %d bytes", pos, class, len(chunk))
	}
	return binary.BigEndian.Uint64(chunk[off:]), nil
}

// chunkOf is a copy of a class's chunk (nil when there is none): the store's bytes are
// its cache's, never to be written in place.
func (k Keeper) chunkOf(ctx context.Context, key collections.Pair[string, uint64]) ([]byte, error) {
	chunk, err := k.MemberChunks.Get(ctx, key)
	if errors.Is(err, collections.ErrNotFound) {
		return nil, nil
	}
	return slices.Clone(chunk), err
}

// setChunk stores a chunk, or removes it when it is empty.
func (k Keeper) setChunk(ctx context.Context, key collections.Pair[string, uint64], chunk []byte) error {
	if len(chunk) == 0 {
		return k.MemberChunks.Remove(ctx, key)
	}
	return k.MemberChunks.Set(ctx, key, chunk)
}

// addMember gives a node the next position of its class.
func (k Keeper) addMember(ctx context.Context, class string, node uint64) error {
	n, err := k.ClassSize.Get(ctx, class)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	key, off := memberKey(class, n)
	chunk, err := k.chunkOf(ctx, key)
	if err != nil {
		return err
	}
	if len(chunk) != off {
		return fmt.Errorf("market: class %q of %d members: last chunk of %d bytes", class, n, len(chunk))
	}
	if err := k.setChunk(ctx, key, binary.BigEndian.AppendUint64(chunk, node)); err != nil {
		return err
	}
	if err := k.MemberPos.Set(ctx, node, n); err != nil {
		return err
	}
	return k.ClassSize.Set(ctx, class, n+1)
}

// removeMember takes a node out of its class: the class's last node takes its position.
func (k Keeper) removeMember(ctx context.Context, class string, node uint64) error {
	n, err := k.ClassSize.Get(ctx, class)
	if err != nil {
		return fmt.Errorf("market: class %q size: %w", class, err)
	}
	pos, err := k.MemberPos.Get(ctx, node)
	if err != nil {
		return fmt.Errorf("market: position of node %d: %w", node, err)
	}
	last := n - 1
	if pos > last {
		return fmt.Errorf("market: node %d at position %d of class %q of %d members", node, pos, class, n)
	}
	lastKey, lastOff := memberKey(class, last)
	lastChunk, err := k.chunkOf(ctx, lastKey)
	if err != nil {
		return err
	}
	if len(lastChunk) != lastOff+8 {
		return fmt.Errorf("market: class %q of %d members: last chunk of %d bytes", class, n, len(lastChunk))
	}
	// the chunk that holds pos (the last one itself when pos is in it) must hold node there
	key, off := memberKey(class, pos)
	holder, apart := lastChunk, pos/memberChunk != last/memberChunk // (a Pair's fields are pointers: keys do not compare)
	if apart {
		if holder, err = k.chunkOf(ctx, key); err != nil {
			return err
		}
	}
	if off+8 > len(holder) {
		return fmt.Errorf("market: member %d of class %q: chunk of %d bytes", pos, class, len(holder))
	}
	if at := binary.BigEndian.Uint64(holder[off:]); at != node {
		return fmt.Errorf("market: node %d at position %d of class %q: the position holds node %d", node, pos, class, at)
	}
	if pos != last {
		moved := binary.BigEndian.Uint64(lastChunk[lastOff:])
		binary.BigEndian.PutUint64(holder[off:], moved)
		if apart {
			if err := k.setChunk(ctx, key, holder); err != nil {
				return err
			}
		}
		if err := k.MemberPos.Set(ctx, moved, pos); err != nil {
			return err
		}
	}
	lastChunk = lastChunk[:lastOff]
	if err := k.setChunk(ctx, lastKey, lastChunk); err != nil {
		return err
	}
	if err := k.MemberPos.Remove(ctx, node); err != nil {
		return err
	}
	if last == 0 {
		return k.ClassSize.Remove(ctx, class)
	}
	return k.ClassSize.Set(ctx, class, last)
}
