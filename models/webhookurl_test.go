package models_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestCheckURLCharacters: characters RFC 3986 does not allow are refused
// with invalid_url, naming the character and its percent-encoding; valid
// encodings and every allowed character in its place pass.
func TestCheckURLCharacters(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // a part of the message; empty: accepted
	}{
		{"https://hooks.example.com/a", ""},
		{"http://hooks.example.com:8080/p/a%20b?q=a%20b&r=x+y;s=(1)*!$',~@:/?#frag/?:@", ""},
		{"http://[2001:db8::1]:8080/p", ""},
		{"http://hooks.example.com/%7e%7E", ""},
		{"http://hooks.example.com/p?q=a b", "a space at character 31, which a URL may not hold as it is: percent-encode it as %20"},
		{"http://ho st/", "a space at character 10"},
		{" http://hooks.example.com/", "a space at character 1"},
		{"http://hooks.example.com/\t", "the control character U+0009 at character 26"},
		{"http://hooks.example.com/\x7f", "U+007F"},
		{"http://hooks.example.com/\"", `'"' at character 26`},
		{"http://hooks.example.com/<", "percent-encode it as %3C"},
		{"http://hooks.example.com/>", "%3E"},
		{"http://hooks.example.com/\\", "%5C"},
		{"http://hooks.example.com/^", "%5E"},
		{"http://hooks.example.com/`", "%60"},
		{"http://hooks.example.com/{", "%7B"},
		{"http://hooks.example.com/|", "%7C"},
		{"http://hooks.example.com/}", "%7D"},
		{"http://hooks.example.com/p?filter[a]=1", "'[' at character 34"},
		{"http://hooks.example.com/p#a#b", "'#' at character 29"},
		{"http://hooks.example.com/caf\u00e9", "'\u00e9' (U+00E9) at character 29, which a URL may not hold as it is: percent-encode it as %C3%A9"},
		{"http://hooks.example.com/\xff", "the byte 0xFF"},
		{"http://b\u00fccher.example/", "write an international host name in its ASCII form"},
		{"http://hooks.example.com/100%", `"%" at character 29 is not followed by two hexadecimal digits`},
		{"http://hooks.example.com/%zz", "%25"},
		{"http://hooks.example.com/%2", "not followed by two hexadecimal digits"},
	} {
		err := models.CheckURLCharacters(tc.url)
		if tc.want == "" {
			if err != nil {
				t.Errorf("CheckURLCharacters(%q) = %v, want accepted", tc.url, err)
			}
			continue
		}
		var me *models.Error
		if !errors.As(err, &me) || me.Kind != models.KindInvalidURL || !strings.Contains(me.Message, tc.want) {
			t.Errorf("CheckURLCharacters(%q) = %v, want invalid_url with %q", tc.url, err, tc.want)
		}
	}
}
