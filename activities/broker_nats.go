package activities

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recordhub/recordhub/models"
)

// natsMsgIDHeader is JetStream's dedupe header: a stream drops a message
// whose id it has seen within its duplicates window.
const natsMsgIDHeader = "Nats-Msg-Id"

// natsConn is a pooled NATS connection and its JetStream context. It does
// not reconnect by itself: a connection that drops is closed, and the
// next attempt dials again, so that an attempt never waits on a broker
// that is away (nor has its message buffered meanwhile).
type natsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func dialNATS(ctx context.Context, dialer *net.Dialer, dest *brokerDest) (brokerConn, error) {
	b := dest.url
	rd := &recordingDialer{d: dialer}
	opts := []nats.Option{
		nats.Name("recordhub-webhooks"),
		nats.NoReconnect(),
		nats.DontRandomize(),
		nats.IgnoreDiscoveredServers(),
		nats.SetCustomDialer(rd),
		nats.Timeout(dialer.Timeout),
		// Asynchronous errors end in a closed connection, which the next
		// attempt finds; nothing to print.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	switch {
	case b.HasPassword:
		opts = append(opts, nats.UserInfo(b.User, b.Password))
	case b.User != "":
		opts = append(opts, nats.Token(b.User))
	}
	if dest.tls != nil {
		opts = append(opts, nats.Secure(dest.tls.Clone()))
	}
	// The login goes in the options, never in the URL: a library's error
	// may quote its URL.
	nc, err := nats.Connect("nats://"+b.Address(), opts...)
	if err != nil {
		if rd.err != nil && errors.Is(err, nats.ErrNoServers) {
			err = rd.err // why the one server could not be reached
		}
		return nil, natsDialError(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsConn{nc: nc, js: js}, nil
}

// recordingDialer keeps the last dial error, which the library reports as
// "no servers available".
type recordingDialer struct {
	d   *net.Dialer
	err error
}

func (r *recordingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := r.d.Dial(network, address)
	r.err = err
	return c, err
}

func natsDialError(err error) error {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		return &brokerError{code: models.DeliveryErrAuthFailed, message: "the broker refused the login (user and password, or token)", err: err}
	}
	if errors.Is(err, nats.ErrTLS) && !isTLSError(err) {
		// A server that wants a client certificate it did not get may
		// close the connection right after the handshake (TLS 1.3 sends
		// its refusal then), so that the client sees its first write
		// fail: still the TLS material's fault.
		return &brokerError{code: models.DeliveryErrTLS, message: "TLS handshake failed: " + innermost(err), err: err}
	}
	return err
}

func (c *natsConn) remoteAddr() string { return remoteIP(c.nc.ConnectedAddr()) }

func (c *natsConn) closed() bool { return !c.nc.IsConnected() }

func (c *natsConn) close() { c.nc.Close() }

func (c *natsConn) publish(ctx context.Context, dest *brokerDest, m *brokerMessage) (*brokerConfirm, error) {
	msg := nats.NewMsg(dest.target)
	msg.Data = m.body
	for k, v := range m.headers {
		msg.Header[k] = []string{v}
	}
	msg.Header[natsMsgIDHeader] = []string{m.id}
	ack, err := c.js.PublishMsg(ctx, msg)
	if errors.Is(err, nats.ErrConnectionClosed) {
		return nil, &notSentError{natsPublishError(err, dest.target)}
	}
	if err != nil {
		return nil, natsPublishError(err, dest.target)
	}
	return &brokerConfirm{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate, Domain: ack.Domain}, nil
}

func natsPublishError(err error, subject string) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return &brokerError{code: models.DeliveryErrUnroutable, message: "no JetStream stream captures subject " + subject + ": create a stream whose subjects include it", err: err}
	case errors.As(err, &apiErr):
		return &brokerError{code: models.DeliveryErrBrokerRefused, message: "JetStream refused the message: " + apiErr.Description, err: err}
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, nats.ErrConnectionReconnecting):
		return &brokerError{code: models.DeliveryErrConnection, message: "the connection to the broker was closed", err: err}
	case errors.Is(err, nats.ErrTimeout):
		return context.DeadlineExceeded
	}
	return err
}
