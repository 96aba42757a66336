module github.com/agentgate-dev/agentgate

go 1.26
