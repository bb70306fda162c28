package models

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckURLCharacters refuses, with an error of kind KindInvalidURL naming
// the first offending character, a webhook URL holding a character that
// RFC 3986 does not allow. Allowed are the unreserved characters (letters,
// digits, "-", ".", "_", "~"), the sub-delimiters ("!", "$", "&", "'", "(",
// ")", "*", "+", ",", ";", "="), ":", "@", "/", "?" and one "#" (which
// starts the fragment), "[" and "]" only inside the host (an IPv6
// address), and "%" only when two hexadecimal digits follow it. Everything
// else (spaces and other control characters, non-ASCII characters, `"`,
// "<", ">", "\", "^", "`", "{", "|", "}") must be percent-encoded by the
// sender: such a URL would otherwise go on the request line as it is, and
// receivers answer it 400. What the URL means (scheme, host, the
// addresses it reaches) is the egress guard's to judge. A broker URL
// (amqp, amqps, nats) may also hold "{" and "}", around the placeholders
// of its routing key or subject: it never goes on a request line.
func CheckURLCharacters(rawURL string) error {
	braces := IsBrokerURL(rawURL)
	// The authority runs from "//" after the scheme to the next "/", "?"
	// or "#"; only there may brackets enclose an IPv6 address.
	authStart, authEnd := -1, -1
	if i := strings.Index(rawURL, "://"); i >= 0 {
		authStart = i + 3
		authEnd = len(rawURL)
		if j := strings.IndexAny(rawURL[authStart:], "/?#"); j >= 0 {
			authEnd = authStart + j
		}
	}
	inFragment := false
	pos := 0
	for i := 0; i < len(rawURL); {
		r, size := utf8.DecodeRuneInString(rawURL[i:])
		pos++
		c := rawURL[i]
		ok := false
		switch {
		case size > 1 || r == utf8.RuneError || c < 0x21 || c > 0x7e:
		case c == '%':
			if i+2 < len(rawURL) && isHex(rawURL[i+1]) && isHex(rawURL[i+2]) {
				i += 3
				pos += 2
				continue
			}
			return Errorf(KindInvalidURL, `the URL's "%%" at character %d is not followed by two hexadecimal digits: write a literal "%%" as %%25`, pos)
		case c == '[' || c == ']':
			ok = i >= authStart && i < authEnd
		case c == '{' || c == '}':
			ok = braces
		case c == '#':
			ok = !inFragment
			inFragment = true
		default:
			ok = strings.IndexByte(urlChars, c) >= 0
		}
		if !ok && size > 1 && i >= authStart && i < authEnd {
			return Errorf(KindInvalidURL, "the URL's host contains %s at character %d: write an international host name in its ASCII form (xn--…)", describeChar(rawURL[i:i+size], r), pos)
		}
		if !ok {
			return Errorf(KindInvalidURL, "the URL contains %s at character %d, which a URL may not hold as it is: percent-encode it as %s", describeChar(rawURL[i:i+size], r), pos, percentEncode(rawURL[i:i+size]))
		}
		i += size
	}
	return nil
}

// urlChars are the characters allowed anywhere in a URL, besides the
// ones CheckURLCharacters judges by their place ("%", "[", "]", "#").
const urlChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?"

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func describeChar(s string, r rune) string {
	switch {
	case s == " ":
		return "a space"
	case len(s) == 1 && r == utf8.RuneError:
		return fmt.Sprintf("the byte 0x%02X, which is not UTF-8,", s[0])
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf("the control character U+%04X", r)
	case r < 0x80:
		return "'" + s + "'"
	}
	return fmt.Sprintf("'%s' (U+%04X)", s, r)
}

func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}
