// sarama_group runs consumer-group members and offset queries with sarama
// (Debian's 1.22, built in GOPATH mode) at protocol version 0.10.2.0, the
// oldest sarama's ConsumerGroup accepts (JoinGroup v1, SyncGroup v0,
// OffsetCommit v2, OffsetFetch v1, Fetch v3, ListOffsets v1).
//
//	sarama_group group BROKER GROUP TOPIC MEMBERS WANT IDLE_MS INITIAL
//	    starts MEMBERS members of GROUP in this process (each its own client,
//	    so its own member), reads TOPIC until WANT messages arrived in all,
//	    then IDLE_MS more, marking every message; closing the members commits.
//	    INITIAL (oldest or newest) is the reset policy: where a partition
//	    without a committed offset, or with one out of range, starts.
//	    Prints "claims MEMBER GENERATION P,P,..." at each generation and
//	    "read MEMBER PARTITION OFFSET VALUE" per message.
//	sarama_group offsets BROKER TOPIC PARTITION TIME...
//	    prints "offset TIME OFFSET" per TIME (ms, or -1 newest, -2 oldest)
//	    as Client.GetOffset answers, then fetches PARTITION at the newest
//	    offset + 100 and prints "fetch OFFSET ERROR".
//
// Any other error exits non-zero.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

func number(text string) int64 {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		fail("number", err)
	}
	return n
}

func config(clientID string) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V0_10_2_0
	c.ClientID = clientID
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	return c
}

// out serialises the lines of concurrent members.
var out sync.Mutex

func say(format string, args ...interface{}) {
	out.Lock()
	defer out.Unlock()
	fmt.Printf(format+"\n", args...)
}

type member struct {
	id   int
	read chan<- struct{}
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	var parts []string
	for _, ps := range s.Claims() {
		sorted := append([]int32(nil), ps...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		for _, p := range sorted {
			parts = append(parts, strconv.Itoa(int(p)))
		}
	}
	say("claims %d %d %s", m.id, s.GenerationID(), strings.Join(parts, ","))
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		say("read %d %d %d %s", m.id, msg.Partition, msg.Offset, msg.Value)
		s.MarkMessage(msg, "")
		m.read <- struct{}{}
	}
	return nil
}

func group(args []string) {
	if len(args) != 7 {
		fail("usage", fmt.Errorf("group BROKER GROUP TOPIC MEMBERS WANT IDLE_MS INITIAL"))
	}
	broker, groupID, topic := args[0], args[1], args[2]
	members, want, idle := int(number(args[3])), int(number(args[4])), number(args[5])
	initial := map[string]int64{"oldest": sarama.OffsetOldest, "newest": sarama.OffsetNewest}[args[6]]
	if initial == 0 {
		fail("initial", fmt.Errorf("%q is neither oldest nor newest", args[6]))
	}

	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan struct{}, 1024)
	var groups []sarama.ConsumerGroup
	var running sync.WaitGroup
	for i := 1; i <= members; i++ {
		c := config(fmt.Sprintf("member-%d", i))
		c.Consumer.Offsets.Initial = initial
		c.Consumer.Return.Errors = true
		g, err := sarama.NewConsumerGroup([]string{broker}, groupID, c)
		if err != nil {
			fail("consumer group", err)
		}
		groups = append(groups, g)
		go func() {
			for err := range g.Errors() {
				fail("group error", err)
			}
		}()
		running.Add(1)
		go func(m *member) {
			defer running.Done()
			// Consume returns at each rebalance: join again until done.
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, m); err != nil && ctx.Err() == nil {
					fail("consume", err)
				}
			}
		}(&member{id: i, read: read})
	}

	deadline := time.After(60 * time.Second)
	for n := 0; n < want; n++ {
		select {
		case <-read:
		case <-deadline:
			fail("consume", fmt.Errorf("only %d of %d messages in 60 s", n, want))
		}
	}
	// Anything read past WANT (read twice, or not committed before) shows.
	time.Sleep(time.Duration(idle) * time.Millisecond)
	cancel()
	running.Wait()
	for _, g := range groups {
		if err := g.Close(); err != nil {
			fail("close", err)
		}
	}
}

func offsets(args []string) {
	if len(args) < 4 {
		fail("usage", fmt.Errorf("offsets BROKER TOPIC PARTITION TIME..."))
	}
	broker, topic, partition := args[0], args[1], int32(number(args[2]))
	client, err := sarama.NewClient([]string{broker}, config("offsets"))
	if err != nil {
		fail("client", err)
	}
	defer client.Close()
	for _, t := range args[3:] {
		offset, err := client.GetOffset(topic, partition, number(t))
		if err != nil {
			fail("get offset", err)
		}
		say("offset %s %d", t, offset)
	}

	newest, err := client.GetOffset(topic, partition, sarama.OffsetNewest)
	if err != nil {
		fail("newest", err)
	}
	leader, err := client.Leader(topic, partition)
	if err != nil {
		fail("leader", err)
	}
	req := &sarama.FetchRequest{Version: 3, MaxWaitTime: 100, MinBytes: 1, MaxBytes: 1 << 20}
	req.AddBlock(topic, partition, newest+100, 1<<20)
	resp, err := leader.Fetch(req)
	if err != nil {
		fail("fetch", err)
	}
	block := resp.GetBlock(topic, partition)
	if block == nil {
		fail("fetch", fmt.Errorf("no block for %s/%d", topic, partition))
	}
	say("fetch %d %v", newest+100, block.Err)
}

func main() {
	if len(os.Args) < 2 {
		fail("usage", fmt.Errorf("sarama_group group|offsets ..."))
	}
	switch os.Args[1] {
	case "group":
		group(os.Args[2:])
	case "offsets":
		offsets(os.Args[2:])
	default:
		fail("usage", fmt.Errorf("unknown command %q", os.Args[1]))
	}
}
