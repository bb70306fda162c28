package models

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"time"
)

// CertificateInfo describes a certificate for people: who it names, who
// issued it, when it expires, and its fingerprint.
type CertificateInfo struct {
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	NotBefore time.Time `json:"not_before"`
	NotAfter  time.Time `json:"not_after"`
	// SHA256 is the hex SHA-256 of the certificate's DER bytes.
	SHA256 string `json:"sha256"`
}

func certificateInfo(c *x509.Certificate) CertificateInfo {
	sum := sha256.Sum256(c.Raw)
	return CertificateInfo{
		Subject: c.Subject.String(), Issuer: c.Issuer.String(),
		NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC(), SHA256: hex.EncodeToString(sum[:]),
	}
}

// CheckEndpointTLS validates an endpoint's TLS material and describes it:
// the client certificate and its key come together, parse, and match; the
// CA bundle holds certificates only. Field errors name the tls member.
func CheckEndpointTLS(t EndpointTLS) (EndpointTLSInfo, []FieldError) {
	var (
		info EndpointTLSInfo
		errs []FieldError
	)
	bad := func(field, msg string) { errs = append(errs, FieldError{Field: "tls." + field, Message: msg}) }
	for field, v := range map[string]string{"client_certificate": t.ClientCertificate, "client_key": t.ClientKey, "ca_certificates": t.CACertificates} {
		if len(v) > MaxPEMBytes {
			bad(field, tooLong(MaxPEMBytes, len(v)))
		}
	}
	if len(errs) > 0 {
		return info, errs
	}
	if t.ClientKey == HeaderMask {
		bad("client_key", fmt.Sprintf("is %q, the mask that answers show instead of the key: send the PEM key, or leave client_key out to keep the stored one", HeaderMask))
		return info, errs
	}
	switch {
	case t.ClientCertificate == "" && t.ClientKey != "":
		bad("client_certificate", "is required with client_key")
	case t.ClientCertificate != "" && t.ClientKey == "":
		bad("client_key", "is required with client_certificate")
	case t.ClientCertificate != "":
		certs, err := parseCertificates(t.ClientCertificate)
		if err != nil {
			bad("client_certificate", err.Error())
			break
		}
		if _, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey)); err != nil {
			bad("client_key", "must be the PEM private key (PKCS #1, PKCS #8 or SEC 1) of client_certificate: "+keyPairProblem(err))
			break
		}
		leaf := certificateInfo(certs[0])
		info.ClientCertificate = &leaf
	}
	if t.CACertificates != "" {
		certs, err := parseCertificates(t.CACertificates)
		if err != nil {
			bad("ca_certificates", err.Error())
		}
		for _, c := range certs {
			info.CACertificates = append(info.CACertificates, certificateInfo(c))
		}
	}
	return info, errs
}

// parseCertificates reads PEM text holding one or more CERTIFICATE blocks
// and nothing else.
func parseCertificates(text string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(text)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a PEM %q block; only CERTIFICATE blocks are accepted", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %s", len(out)+1, err.Error())
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("must be PEM text holding at least one CERTIFICATE block")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, fmt.Errorf("holds text after its last PEM block")
	}
	return out, nil
}

// keyPairProblem says what tls.X509KeyPair found, without key material.
func keyPairProblem(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "does not match"):
		return "the key does not match the certificate's public key"
	case strings.Contains(msg, "failed to find"), strings.Contains(msg, "failed to parse"):
		return "no private key could be read from it"
	}
	return "it could not be read"
}
