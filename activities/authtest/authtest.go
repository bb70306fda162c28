// Package authtest gives tests what a receiver that wants credentials has:
// an OAuth2 authorization server from a maintained library (zitadel/oidc's
// OpenID provider) serving the client credentials grant, with a resource
// server's check of the tokens it signs, and certificate authorities of a
// test's own for mutual TLS. Only tests import it.
package authtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	oidcstorage "github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Server is an authorization server for one client (ClientID, Secret),
// signing JWT access tokens that expire lifetime after its clock's now.
type Server struct {
	*httptest.Server
	ClientID, Secret string
	// Requests counts the token endpoint's requests; LastStatus is the
	// status of its last answer.
	Requests, LastStatus atomic.Int64
	mu                   sync.Mutex
	audiences            []string
	verifier             *op.AccessTokenVerifier
}

// NewServer starts a Server, closed when the test ends.
func NewServer(t testing.TB, now func() time.Time, lifetime time.Duration) *Server {
	t.Helper()
	a := &Server{ClientID: "recordhub-acme", Secret: "cs-9f3e1d7a-client-secret"}
	var provider http.Handler
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/token" {
			provider.ServeHTTP(w, r)
			return
		}
		a.Requests.Add(1)
		if err := r.ParseForm(); err == nil {
			a.mu.Lock()
			a.audiences = append(a.audiences, r.PostForm.Get("audience"))
			a.mu.Unlock()
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		provider.ServeHTTP(sw, r)
		a.LastStatus.Store(int64(sw.status))
	}))
	t.Cleanup(a.Close)
	st := &storage{
		Storage: oidcstorage.NewStorage(oidcstorage.NewUserStore(a.URL)),
		client:  a.ClientID, secret: a.Secret, lifetime: lifetime, now: now,
	}
	p, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256([]byte("test"))}, st, op.StaticIssuer(a.URL), op.WithAllowInsecure())
	if err != nil {
		t.Fatalf("authorization server: %v", err)
	}
	provider = p
	a.verifier = op.NewAccessTokenVerifier(a.URL, rp.NewRemoteKeySet(http.DefaultClient, a.URL+"/keys"))
	return a
}

// TokenURL is the token endpoint's URL.
func (a *Server) TokenURL() string { return a.URL + "/oauth/token" }

// Verify checks an access token as a resource server does: issued by a,
// signed with its keys, for its client, not expired by real time; and not
// expired at now, the time the test moved to. It returns the token's
// expiry, also when that is what failed.
func (a *Server) Verify(ctx context.Context, token string, now time.Time) (time.Time, error) {
	claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, token, a.verifier)
	if err != nil {
		return time.Time{}, err
	}
	if claims.Subject != a.ClientID {
		return time.Time{}, fmt.Errorf("token for %q", claims.Subject)
	}
	exp := claims.GetExpiration()
	if !now.Before(exp) {
		return exp, fmt.Errorf("token expired at %s, now %s", exp, now)
	}
	return exp, nil
}

// Audiences returns the audience parameters of the token requests.
func (a *Server) Audiences() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.audiences...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// storage is the library's example storage with one client allowed the
// client credentials grant, whose tokens are JWTs on the test's clock.
type storage struct {
	*oidcstorage.Storage
	client, secret string
	lifetime       time.Duration
	now            func() time.Time
}

type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}

func (s *storage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	if id != s.client || secret != s.secret {
		return nil, errors.New("wrong client id or secret")
	}
	return jwtClient{oidcstorage.WebClient(id, secret)}, nil
}

func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	return &oidc.JWTTokenRequest{Subject: id, Audience: []string{"receiver"}, Scopes: scopes}, nil
}

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	id := make([]byte, 16)
	rand.Read(id)
	return hex.EncodeToString(id), s.now().Add(s.lifetime), nil
}

// CA is a certificate authority of a test's own.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  string
}

// NewCA makes a CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// Pool is a pool of the CA's certificate alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue returns a certificate for name signed by the CA, and its key, as
// PEM and as a pair: a client certificate, or, with server, one for
// 127.0.0.1.
func (ca *CA) Issue(t testing.TB, name string, server bool) (certPEM, keyPEM string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(12 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
	if pair, err = tls.X509KeyPair([]byte(certPEM), []byte(keyPEM)); err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, pair
}
