package daemon

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/testdirs"
	"github.com/flopsnet/flops/worker/config"
)

// With outputs.tls_cert and tls_key the output server speaks HTTPS only.
func TestOutputServerOverTLS(t *testing.T) {
	certFile, keyFile, pool := testdirs.SelfSigned(t, t.TempDir())
	conf, err := config.Outputs{TLSCert: certFile, TLSKey: keyFile}.ServerTLS()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "outputs") }), conf)
	}()
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 5 * time.Second}
	var body string
	require.Eventually(t, func() bool {
		resp, err := trusting.Get("https://" + addr + "/")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return true
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "outputs", body)
	plain, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
	if err == nil {
		require.NotEqual(t, http.StatusOK, plain.StatusCode, "plain HTTP is not served")
		_ = plain.Body.Close()
	}
	cancel()
	require.NoError(t, <-done)
}
