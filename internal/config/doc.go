// Package config is the only reader of the environment. Each binary's settings are parsed
// once at start into a typed struct, validated, and every problem is reported together
// (errors.Join), so a misconfigured daemon refuses to start with the whole list.
package config
