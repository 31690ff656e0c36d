// kafka_go_roundtrip writes three messages with kafka-go (Debian's 0.2,
// built in GOPATH mode: Metadata v1, Produce v2, Fetch v2, ListOffsets v1,
// message format 1) with a codec to partition 0 of a topic, then reads
// them back from the partition's first offset, printing one line per
// message: "offset key value timestamp-ms". Any error exits non-zero.
//
//	kafka_go_roundtrip BROKER TOPIC CODEC    (CODEC: none, gzip, snappy, lz4)
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fail("usage", fmt.Errorf("kafka_go_roundtrip BROKER TOPIC CODEC"))
	}
	broker, topic, codecText := os.Args[1], os.Args[2], os.Args[3]
	codecs := map[string]kafka.CompressionCodec{
		"gzip": gzip.NewCompressionCodec(), "snappy": snappy.NewCompressionCodec(),
		"lz4": lz4.NewCompressionCodec(), "none": nil,
	}
	codec, ok := codecs[codecText]
	if !ok {
		fail("codec", fmt.Errorf("unknown codec %q", codecText))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var conn *kafka.Conn
	var err error
	// The first Metadata creates the topic; its leader may take a moment.
	for attempt := 0; ; attempt++ {
		conn, err = kafka.DialLeader(ctx, "tcp", broker, topic, 0)
		if err == nil || attempt == 20 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		fail("dial", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))

	base := time.Unix(1700000000, 0)
	var messages []kafka.Message
	for i := 0; i < 3; i++ {
		messages = append(messages, kafka.Message{
			Key:   []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(fmt.Sprintf("v%d-%s", i, codecText)),
			Time:  base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	if codec == nil {
		_, err = conn.WriteMessages(messages...)
	} else {
		_, err = conn.WriteCompressedMessages(codec, messages...)
	}
	if err != nil {
		fail("write", err)
	}

	first, err := conn.ReadFirstOffset()
	if err != nil {
		fail("first offset", err)
	}
	if _, err := conn.Seek(first, kafka.SeekAbsolute); err != nil {
		fail("seek", err)
	}
	batch := conn.ReadBatch(1, 1<<20)
	for i := 0; i < 3; i++ {
		m, err := batch.ReadMessage()
		if err != nil {
			fail("read", err)
		}
		fmt.Printf("%d %s %s %d\n", m.Offset, m.Key, m.Value, m.Time.UnixNano()/int64(time.Millisecond))
	}
	batch.Close()
}
