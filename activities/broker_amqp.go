package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/recordhub/recordhub/models"
)

// amqpConn is a pooled AMQP 0-9-1 connection and its idle channels, each
// in confirm mode. A channel carries one publish at a time, so that the
// confirmation and the return it waits for are its message's.
type amqpConn struct {
	conn *amqp.Connection
	mu   sync.Mutex
	idle []*amqpChannel
}

// amqpChannel is a confirm-mode channel with its listeners: returns gets
// the messages the broker could not route (sent before their ack), closes
// the error that closed the channel.
type amqpChannel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
	closes  chan *amqp.Error
}

// maxIdleAMQPChannels bounds the channels a connection keeps open between
// attempts.
const maxIdleAMQPChannels = 32

func dialAMQP(ctx context.Context, dialer *net.Dialer, dest *brokerDest) (brokerConn, error) {
	b := dest.url
	uri := amqp.URI{Scheme: "amqp", Host: b.Host, Port: b.Port, Username: "guest", Password: "guest", Vhost: b.VHost}
	if b.TLS {
		uri.Scheme = "amqps"
	}
	if b.User != "" || b.HasPassword {
		uri.Username, uri.Password = b.User, b.Password
	}
	cfg := amqp.Config{
		Heartbeat: 10 * time.Second,
		Locale:    "en_US",
		// The dialer's deadline covers TCP, TLS and the AMQP handshake; the
		// library clears it once the connection is open.
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if dl, ok := ctx.Deadline(); ok {
				c.SetDeadline(dl)
			}
			return c, nil
		},
		Properties: amqp.Table{"connection_name": "recordhub-webhooks"},
	}
	if b.TLS {
		cfg.TLSClientConfig = dest.tls
		if cfg.TLSClientConfig == nil {
			cfg.TLSClientConfig = defaultTLS()
		}
		cfg.TLSClientConfig = cfg.TLSClientConfig.Clone()
		cfg.TLSClientConfig.ServerName = b.Host
	}
	conn, err := amqp.DialConfig(uri.String(), cfg)
	if err != nil {
		return nil, amqpDialError(err)
	}
	return &amqpConn{conn: conn}, nil
}

// amqpDialError names a refused login; other errors are the network's,
// classified as for HTTP.
func amqpDialError(err error) error {
	var ae *amqp.Error
	switch {
	case errors.Is(err, amqp.ErrCredentials), errors.As(err, &ae) && ae.Code == amqp.AccessRefused:
		return &brokerError{code: models.DeliveryErrAuthFailed, message: "the broker refused the login (user name or password), or the user may not use the virtual host", err: err}
	case errors.As(err, &ae) && ae.Code == amqp.NotAllowed:
		return &brokerError{code: models.DeliveryErrBrokerRefused, message: "the broker refused the connection: " + ae.Reason, err: err}
	case errors.Is(err, amqp.ErrSASL), errors.Is(err, amqp.ErrVhost):
		return &brokerError{code: models.DeliveryErrBrokerRefused, message: "the broker refused the connection: " + err.Error(), err: err}
	}
	return err
}

func (c *amqpConn) remoteAddr() string {
	if a := c.conn.RemoteAddr(); a != nil {
		return remoteIP(a.String())
	}
	return ""
}

func (c *amqpConn) closed() bool { return c.conn.IsClosed() }

func (c *amqpConn) close() { c.conn.Close() }

// channel takes an idle channel, or opens one.
func (c *amqpConn) channel() (*amqpChannel, error) {
	c.mu.Lock()
	for len(c.idle) > 0 {
		ch := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if !ch.ch.IsClosed() {
			c.mu.Unlock()
			return ch, nil
		}
	}
	c.mu.Unlock()
	ch, err := c.conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return nil, err
	}
	out := &amqpChannel{ch: ch, returns: make(chan amqp.Return, 4), closes: make(chan *amqp.Error, 1)}
	ch.NotifyReturn(out.returns)
	ch.NotifyClose(out.closes)
	return out, nil
}

// release gives a channel back, or closes it when there are enough idle.
func (c *amqpConn) release(ch *amqpChannel) {
	c.mu.Lock()
	if len(c.idle) < maxIdleAMQPChannels && !ch.ch.IsClosed() {
		c.idle = append(c.idle, ch)
		ch = nil
	}
	c.mu.Unlock()
	if ch != nil {
		ch.ch.Close()
	}
}

func (c *amqpConn) publish(ctx context.Context, dest *brokerDest, m *brokerMessage) (*brokerConfirm, error) {
	ch, err := c.channel()
	if err != nil {
		return nil, &notSentError{amqpChannelError(err)}
	}
	headers := amqp.Table{}
	for k, v := range m.headers {
		if k != "content-type" {
			headers[k] = v
		}
	}
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, dest.url.Exchange, dest.target, true, false, amqp.Publishing{
		Headers:      headers,
		ContentType:  m.headers["content-type"],
		DeliveryMode: amqp.Persistent,
		MessageId:    m.id,
		Timestamp:    m.timestamp,
		Type:         m.eventType,
		AppId:        "recordhub",
		Body:         m.body,
	})
	if err != nil {
		ch.ch.Close()
		if errors.Is(err, amqp.ErrClosed) {
			return nil, &notSentError{amqpChannelError(err)}
		}
		return nil, amqpChannelError(err)
	}
	select {
	case <-dc.Done():
	case <-ctx.Done():
		// The confirmation may still come, on a channel no one reads:
		// close it rather than give it to the next attempt.
		ch.ch.Close()
		return nil, ctx.Err()
	}
	// The broker sends a return before its ack, and the library hands it
	// over before it marks the confirmation done.
	select {
	case r, ok := <-ch.returns:
		if !ok { // the channel closed
			break
		}
		c.release(ch)
		return nil, &brokerError{code: models.DeliveryErrUnroutable, message: fmt.Sprintf(
			"the broker returned the message: %d %s: no queue is bound to exchange %q with routing key %q", r.ReplyCode, r.ReplyText, r.Exchange, r.RoutingKey)}
	default:
	}
	if !dc.Acked() {
		select {
		case e := <-ch.closes:
			if e != nil && !e.Server {
				return nil, &notSentError{amqpChannelError(e)} // the connection died
			}
			if e != nil {
				return nil, amqpChannelError(e)
			}
		default:
		}
		ch.ch.Close()
		return nil, &brokerError{code: models.DeliveryErrBrokerRefused, message: "the broker did not confirm the message (nack): it could not store it"}
	}
	c.release(ch)
	return &brokerConfirm{DeliveryTag: dc.DeliveryTag}, nil
}

// amqpChannelError names the broker's reason for closing a channel (a
// missing exchange, a refused permission) or the connection.
func amqpChannelError(err error) error {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		if errors.Is(err, amqp.ErrClosed) {
			return &brokerError{code: models.DeliveryErrConnection, message: "the connection to the broker was closed", err: err}
		}
		return err
	}
	if !ae.Server {
		return &brokerError{code: models.DeliveryErrConnection, message: "the connection to the broker was lost: " + ae.Reason, err: err}
	}
	switch ae.Code {
	case amqp.NotFound:
		return &brokerError{code: models.DeliveryErrUnroutable, message: "the broker refused the message: " + strconv.Itoa(ae.Code) + " " + ae.Reason, err: err}
	case amqp.AccessRefused:
		return &brokerError{code: models.DeliveryErrBrokerRefused, message: "the broker refused the message: " + strconv.Itoa(ae.Code) + " " + ae.Reason, err: err}
	}
	if ae.Server && !ae.Recover {
		return &brokerError{code: models.DeliveryErrBrokerRefused, message: "the broker closed the connection: " + strconv.Itoa(ae.Code) + " " + ae.Reason, err: err}
	}
	return &brokerError{code: models.DeliveryErrBrokerRefused, message: "the broker closed the channel: " + strconv.Itoa(ae.Code) + " " + ae.Reason, err: err}
}
