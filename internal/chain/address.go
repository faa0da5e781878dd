package chain

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cosmos/cosmos-sdk/types/address"
	"github.com/cosmos/cosmos-sdk/types/bech32"
)

// AddressCodec is the SDK's bech32 account address codec without its per-call lookup of
// the global config (sdk.GetConfig, which reads the executable's path on every call in
// this SDK version and dominated the scheduler's profile). The checks are the SDK's: the
// prefix, and 1 to address.MaxAddrLen bytes; flops sets no custom address verifier. It
// refuses the upper-case spelling bech32 allows, so one account has one string.
//
// NewAddressCodec adds a bounded memo of decoded addresses: the state machine decodes the
// same stored operator and provider addresses many times a block. Decoding is a pure
// function, so the memo cannot change a result, only skip work; it is safe for the
// concurrent use of queries.
type AddressCodec struct {
	Prefix string
	memo   *addrMemo
}

type addrMemo struct {
	mu sync.Mutex
	m  map[string][]byte
}

// memoSize bounds the memo; it is emptied when full.
const memoSize = 8192

// NewAddressCodec returns a memoizing codec for prefix.
func NewAddressCodec(prefix string) AddressCodec {
	return AddressCodec{Prefix: prefix, memo: &addrMemo{m: make(map[string][]byte, memoSize)}}
}

// StringToBytes decodes a bech32 address with the codec's prefix.
func (c AddressCodec) StringToBytes(text string) ([]byte, error) {
	if c.memo == nil {
		return c.decode(text)
	}
	c.memo.mu.Lock()
	bz, ok := c.memo.m[text]
	c.memo.mu.Unlock()
	if ok {
		return append([]byte(nil), bz...), nil
	}
	bz, err := c.decode(text)
	if err != nil {
		return nil, err
	}
	c.memo.mu.Lock()
	if len(c.memo.m) >= memoSize {
		clear(c.memo.m)
	}
	c.memo.m[text] = append([]byte(nil), bz...)
	c.memo.mu.Unlock()
	return bz, nil
}

func (c AddressCodec) decode(text string) ([]byte, error) {
	if len(strings.TrimSpace(text)) == 0 {
		return []byte{}, errors.New("empty address string is not allowed")
	}
	if strings.ToLower(text) != text {
		// bech32 also allows all upper case, but flops stores and compares the canonical
		// lower-case string: a second spelling of an account would be a second account
		// to every check that compares strings (the owner of a job vs the operator of
		// the node that runs it).
		return nil, fmt.Errorf("address %q is not in canonical (lower-case) bech32 form", text)
	}
	hrp, bz, err := bech32.DecodeAndConvert(text)
	if err != nil {
		return nil, err
	}
	if hrp != c.Prefix {
		return nil, fmt.Errorf("invalid Bech32 prefix; expected %s, got %s", c.Prefix, hrp)
	}
	if len(bz) == 0 {
		return nil, errors.New("addresses cannot be empty")
	}
	if len(bz) > address.MaxAddrLen {
		return nil, fmt.Errorf("address max length is %d, got %d", address.MaxAddrLen, len(bz))
	}
	return bz, nil
}

// BytesToString encodes an address with the codec's prefix.
func (c AddressCodec) BytesToString(bz []byte) (string, error) {
	if len(bz) == 0 {
		return "", nil
	}
	return bech32.ConvertAndEncode(c.Prefix, bz)
}
