// Command tlogcheck checks the transparency log's notes, checkpoints, proofs and proof bundles with the Go team's
// golang.org/x/mod/sumdb/note and golang.org/x/mod/sumdb/tlog, an implementation written outside this project.
//
// It reads JSON lines on stdin, one check per line, and writes one JSON line per check on stdout, in order:
//
//	{"kind": "note", "vkeys": [vkey, ...], "note": text}
//	    note.NewVerifier for each vkey, note.Open with note.VerifierList of them
//	    -> {"ok": true, "text": ..., "signers": [names that verified], "unverified": [names of unknown keys]}
//	{"kind": "record", "size": n, "root": b64, "index": i, "data": b64, "proof": [b64, ...]}
//	    tlog.CheckRecord(proof, size, root, index, tlog.RecordHash(data))
//	{"kind": "tree", "old_size": m, "old_root": b64, "size": n, "root": b64, "proof": [b64, ...]}
//	    tlog.CheckTree(proof, size, root, old_size, old_root)
//	{"kind": "bundle", "bundle": text, "vkey": vkey, "data_hex": hex, "origin": optional}
//	    the c2sp.org/tlog-proof@v1 lines parsed here, the checkpoint opened with note.Open, its three lines parsed
//	    here (c2sp.org/tlog-checkpoint), then tlog.CheckRecord
//	    -> {"ok": true, "origin", "size", "root", "index", "extra", "signers", "unverified"}
//	{"kind": "treehash", "leaves": [b64, ...], "sizes": [n, ...], "stored": bool}
//	    the leaves appended by tlog.StoredHashes; tlog.TreeHash at each size asked (all sizes when none)
//	    -> {"ok": true, "roots": {"n": b64, ...}, "stored": [b64, ...] when asked}
//
// An answer is {"ok": false, "error": "...", "error_type": "..."} when the check fails, and
// {"ok": false, "request_error": "..."} when the request itself is malformed (bad JSON, unknown kind, a field
// missing or not decoding): the caller's mistake, never a verdict. A request's "id" is echoed back.
//
// Build: GO111MODULE=off GOPATH=/usr/share/gocode go build (Debian's golang-go and golang-golang-x-mod-dev).
// Only the standard library and those two packages are imported.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type request struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Kind    string          `json:"kind"`
	VKeys   []string        `json:"vkeys"`
	VKey    string          `json:"vkey"`
	Note    *string         `json:"note"`
	Size    *int64          `json:"size"`
	Root    string          `json:"root"`
	Index   *int64          `json:"index"`
	Data    *string         `json:"data"`
	DataHex *string         `json:"data_hex"`
	Proof   []string        `json:"proof"`
	OldSize *int64          `json:"old_size"`
	OldRoot string          `json:"old_root"`
	Bundle  *string         `json:"bundle"`
	Origin  *string         `json:"origin"`
	Leaves  []string        `json:"leaves"`
	Sizes   []int64         `json:"sizes"`
	Stored  bool            `json:"stored"`
}

type answer map[string]interface{}

// badRequest is the caller's mistake, reported as request_error rather than as a failed check.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func bad(format string, args ...interface{}) error {
	return &badRequest{fmt.Sprintf(format, args...)}
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if encErr := enc.Encode(handle(line)); encErr != nil {
				fmt.Fprintln(os.Stderr, "tlogcheck: cannot write an answer:", encErr)
				os.Exit(2)
			}
			// Answer each line before reading the next one: the caller may wait for it.
			if in.Buffered() == 0 {
				if flushErr := out.Flush(); flushErr != nil {
					fmt.Fprintln(os.Stderr, "tlogcheck: cannot write an answer:", flushErr)
					os.Exit(2)
				}
			}
		}
		if err != nil {
			break
		}
	}
	if err := out.Flush(); err != nil {
		os.Exit(2)
	}
}

func handle(line []byte) answer {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{"ok": false, "request_error": "not a JSON object of a check: " + err.Error()}
	}
	var a answer
	var err error
	switch req.Kind {
	case "note":
		a, err = checkNote(&req)
	case "record":
		a, err = checkRecord(&req)
	case "tree":
		a, err = checkTree(&req)
	case "bundle":
		a, err = checkBundle(&req)
	case "treehash":
		a, err = treeHash(&req)
	default:
		err = bad("unknown kind %q: send note, record, tree, bundle or treehash", req.Kind)
	}
	if err != nil {
		var br *badRequest
		if errors.As(err, &br) {
			a = answer{"ok": false, "request_error": br.msg}
		} else {
			a = answer{"ok": false, "error": err.Error(), "error_type": errorType(err)}
		}
	} else {
		a["ok"] = true
	}
	if len(req.ID) > 0 {
		a["id"] = req.ID
	}
	return a
}

// errorType names the note package's error types, so that a caller can tell a bad signature from an unsigned note.
func errorType(err error) string {
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified):
		return "UnverifiedNoteError"
	case errors.As(err, &invalid):
		return "InvalidSignatureError"
	case err.Error() == "malformed note":
		return "malformed note"
	}
	return "error"
}

func hashOf(what, text string) (tlog.Hash, error) {
	h, err := tlog.ParseHash(text)
	if err != nil {
		return tlog.Hash{}, bad("%s is not a base64 32-byte hash: %q", what, text)
	}
	return h, nil
}

func hashes(what string, texts []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(texts))
	for i, t := range texts {
		h, err := hashOf(fmt.Sprintf("%s[%d]", what, i), t)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

func number(what string, n *int64) (int64, error) {
	if n == nil {
		return 0, bad("%s is missing", what)
	}
	return *n, nil
}

func verifiers(vkeys []string) (note.Verifiers, error) {
	if len(vkeys) == 0 {
		return nil, bad("vkeys is missing: send the verifier keys, <name>+<hex id>+<base64 key>")
	}
	list := make([]note.Verifier, 0, len(vkeys))
	for _, k := range vkeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			// Not a request error: Go refusing a key our code made (e.g. type 0x04) is a finding.
			return nil, fmt.Errorf("note.NewVerifier(%q): %w", k, err)
		}
		list = append(list, v)
	}
	return note.VerifierList(list...), nil
}

func names(sigs []note.Signature) []string {
	out := make([]string, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, s.Name)
	}
	return out
}

func checkNote(req *request) (answer, error) {
	if req.Note == nil {
		return nil, bad("note is missing: send the signed note's text")
	}
	known, err := verifiers(req.VKeys)
	if err != nil {
		return nil, err
	}
	n, err := note.Open([]byte(*req.Note), known)
	if err != nil {
		return nil, err
	}
	return answer{"text": n.Text, "signers": names(n.Sigs), "unverified": names(n.UnverifiedSigs)}, nil
}

func leafData(req *request) ([]byte, error) {
	switch {
	case req.Data != nil && req.DataHex == nil:
		d, err := base64.StdEncoding.DecodeString(*req.Data)
		if err != nil {
			return nil, bad("data is not standard base64")
		}
		return d, nil
	case req.DataHex != nil && req.Data == nil:
		d, err := hex.DecodeString(*req.DataHex)
		if err != nil {
			return nil, bad("data_hex is not hex")
		}
		return d, nil
	}
	return nil, bad("send the leaf data as exactly one of data (base64) or data_hex")
}

func checkRecord(req *request) (answer, error) {
	size, err := number("size", req.Size)
	if err != nil {
		return nil, err
	}
	index, err := number("index", req.Index)
	if err != nil {
		return nil, err
	}
	root, err := hashOf("root", req.Root)
	if err != nil {
		return nil, err
	}
	proof, err := hashes("proof", req.Proof)
	if err != nil {
		return nil, err
	}
	data, err := leafData(req)
	if err != nil {
		return nil, err
	}
	if err := tlog.CheckRecord(proof, size, root, index, tlog.RecordHash(data)); err != nil {
		return nil, err
	}
	return answer{}, nil
}

func checkTree(req *request) (answer, error) {
	oldSize, err := number("old_size", req.OldSize)
	if err != nil {
		return nil, err
	}
	size, err := number("size", req.Size)
	if err != nil {
		return nil, err
	}
	oldRoot, err := hashOf("old_root", req.OldRoot)
	if err != nil {
		return nil, err
	}
	root, err := hashOf("root", req.Root)
	if err != nil {
		return nil, err
	}
	proof, err := hashes("proof", req.Proof)
	if err != nil {
		return nil, err
	}
	// Go's argument order: the new tree (size t, hash th) first, then the old one (n, h).
	if err := tlog.CheckTree(proof, size, root, oldSize, oldRoot); err != nil {
		return nil, err
	}
	return answer{}, nil
}

const bundleHeader = "c2sp.org/tlog-proof@v1"

var decimal = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

type parsedBundle struct {
	extra      []byte
	hasExtra   bool
	index      int64
	proof      []tlog.Hash
	checkpoint string
}

// parseBundle reads a c2sp.org/tlog-proof@v1 text by the spec's rules: the header line, an optional
// "extra <base64>" line, "index <decimal, no leading zeros>", zero or more base64 SHA-256 hashes, an empty line,
// then the checkpoint note verbatim.
func parseBundle(text string) (*parsedBundle, error) {
	head, checkpoint, found := strings.Cut(text, "\n\n")
	if !found {
		return nil, errors.New("tlog-proof: no empty line before the checkpoint")
	}
	lines := strings.Split(head, "\n")
	if lines[0] != bundleHeader {
		return nil, fmt.Errorf("tlog-proof: the first line is not %s", bundleHeader)
	}
	lines = lines[1:]
	b := &parsedBundle{checkpoint: checkpoint}
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		extra, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[0], "extra "))
		if err != nil {
			return nil, errors.New("tlog-proof: the extra line is not base64")
		}
		b.extra, b.hasExtra = extra, true
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return nil, errors.New("tlog-proof: no index line")
	}
	digits := strings.TrimPrefix(lines[0], "index ")
	if !decimal.MatchString(digits) {
		return nil, fmt.Errorf("tlog-proof: the index %q is not a decimal without leading zeros", digits)
	}
	index, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("tlog-proof: the index %q does not fit in 63 bits", digits)
	}
	b.index = index
	for i, line := range lines[1:] {
		if line == "" {
			return nil, fmt.Errorf("tlog-proof: proof line %d is empty", i+1)
		}
		h, err := tlog.ParseHash(line)
		if err != nil {
			return nil, fmt.Errorf("tlog-proof: proof line %d is not a base64 SHA-256 hash", i+1)
		}
		b.proof = append(b.proof, h)
	}
	return b, nil
}

// parseCheckpoint reads a c2sp.org/tlog-checkpoint text: origin, decimal tree size, base64 root hash, then
// optional non-empty extension lines.
func parseCheckpoint(text string) (origin string, size int64, root tlog.Hash, err error) {
	if !strings.HasSuffix(text, "\n") {
		return "", 0, root, errors.New("checkpoint: the text does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return "", 0, root, errors.New("checkpoint: fewer than three lines")
	}
	for _, ext := range lines[3:] {
		if ext == "" {
			return "", 0, root, errors.New("checkpoint: an empty extension line")
		}
	}
	origin = lines[0]
	if origin == "" {
		return "", 0, root, errors.New("checkpoint: the origin line is empty")
	}
	if !decimal.MatchString(lines[1]) {
		return "", 0, root, fmt.Errorf("checkpoint: the size %q is not a decimal without leading zeros", lines[1])
	}
	size, err = strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return "", 0, root, fmt.Errorf("checkpoint: the size %q does not fit in 63 bits", lines[1])
	}
	root, err = tlog.ParseHash(lines[2])
	if err != nil {
		return "", 0, root, errors.New("checkpoint: the root line is not a base64 SHA-256 hash")
	}
	return origin, size, root, nil
}

func checkBundle(req *request) (answer, error) {
	if req.Bundle == nil {
		return nil, bad("bundle is missing: send the tlog-proof text")
	}
	if req.VKey == "" {
		return nil, bad("vkey is missing: send the log's verifier key")
	}
	data, err := leafData(req)
	if err != nil {
		return nil, err
	}
	log, err := note.NewVerifier(req.VKey)
	if err != nil {
		return nil, fmt.Errorf("note.NewVerifier(%q): %w", req.VKey, err)
	}
	b, err := parseBundle(*req.Bundle)
	if err != nil {
		return nil, err
	}
	n, err := note.Open([]byte(b.checkpoint), note.VerifierList(log))
	if err != nil {
		return nil, err
	}
	origin, size, root, err := parseCheckpoint(n.Text)
	if err != nil {
		return nil, err
	}
	want := log.Name()
	if req.Origin != nil {
		want = *req.Origin
	}
	if origin != want {
		return nil, fmt.Errorf("checkpoint: the origin is %q, not %q", origin, want)
	}
	if b.index >= size {
		return nil, fmt.Errorf("tlog-proof: index %d is not in the checkpoint's tree of %d", b.index, size)
	}
	if err := tlog.CheckRecord(b.proof, size, root, b.index, tlog.RecordHash(data)); err != nil {
		return nil, err
	}
	a := answer{
		"origin":     origin,
		"size":       size,
		"root":       root.String(),
		"index":      b.index,
		"signers":    names(n.Sigs),
		"unverified": names(n.UnverifiedSigs),
		"extra":      nil,
	}
	if b.hasExtra {
		a["extra"] = base64.StdEncoding.EncodeToString(b.extra)
	}
	return a, nil
}

func treeHash(req *request) (answer, error) {
	if req.Leaves == nil {
		return nil, bad("leaves is missing: send the leaf data, base64, in log order")
	}
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("stored hash %d is not stored yet", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	want := map[int64]bool{}
	for _, s := range req.Sizes {
		if s < 1 || s > int64(len(req.Leaves)) {
			return nil, bad("size %d is not between 1 and the %d leaves sent", s, len(req.Leaves))
		}
		want[s] = true
	}
	roots := map[string]string{}
	for i, encoded := range req.Leaves {
		data, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return nil, bad("leaves[%d] is not standard base64", i)
		}
		n := int64(i)
		if int64(len(stored)) != tlog.StoredHashIndex(0, n) {
			return nil, fmt.Errorf("stored hashes out of step at leaf %d", n)
		}
		add, err := tlog.StoredHashes(n, data, reader)
		if err != nil {
			return nil, err
		}
		stored = append(stored, add...)
		if len(req.Sizes) == 0 || want[n+1] {
			root, err := tlog.TreeHash(n+1, reader)
			if err != nil {
				return nil, err
			}
			roots[strconv.FormatInt(n+1, 10)] = root.String()
		}
	}
	a := answer{"roots": roots}
	if req.Stored {
		texts := make([]string, len(stored))
		for i, h := range stored {
			texts[i] = h.String()
		}
		a["stored"] = texts
	}
	return a, nil
}
