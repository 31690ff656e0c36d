// kafka_go_group runs readers of one consumer group with kafka-go
// (Debian's 0.2, built in GOPATH mode): each reader is a member, its
// ReadMessage commits what it returned (synchronously: CommitInterval 0).
//
//	kafka_go_group BROKER GROUP TOPIC READERS WANT IDLE_MS
//	    starts READERS readers of GROUP on TOPIC, reads until WANT messages
//	    arrived in all, then IDLE_MS more, and closes them. Prints
//	    "read READER PARTITION OFFSET VALUE" per message.
//
// Any error exits non-zero.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

func number(text string) int {
	n, err := strconv.Atoi(text)
	if err != nil {
		fail("number", err)
	}
	return n
}

func main() {
	if len(os.Args) != 7 {
		fail("usage", fmt.Errorf("kafka_go_group BROKER GROUP TOPIC READERS WANT IDLE_MS"))
	}
	broker, group, topic := os.Args[1], os.Args[2], os.Args[3]
	readers, want, idle := number(os.Args[4]), number(os.Args[5]), number(os.Args[6])

	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan struct{}, 1024)
	var out sync.Mutex
	var running sync.WaitGroup
	var all []*kafka.Reader
	for i := 1; i <= readers; i++ {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:           []string{broker},
			GroupID:           group,
			Topic:             topic,
			MinBytes:          1,
			MaxBytes:          1 << 20,
			MaxWait:           100 * time.Millisecond,
			HeartbeatInterval: time.Second,
			SessionTimeout:    6 * time.Second,
			RebalanceTimeout:  10 * time.Second,
		})
		all = append(all, r)
		running.Add(1)
		go func(id int, r *kafka.Reader) {
			defer running.Done()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					fail("read", err)
				}
				out.Lock()
				fmt.Printf("read %d %d %d %s\n", id, m.Partition, m.Offset, m.Value)
				out.Unlock()
				read <- struct{}{}
			}
		}(i, r)
	}

	deadline := time.After(60 * time.Second)
	for n := 0; n < want; n++ {
		select {
		case <-read:
		case <-deadline:
			fail("read", fmt.Errorf("only %d of %d messages in 60 s", n, want))
		}
	}
	time.Sleep(time.Duration(idle) * time.Millisecond)
	cancel()
	running.Wait()
	for _, r := range all {
		if err := r.Close(); err != nil {
			fail("close", err)
		}
	}
}
