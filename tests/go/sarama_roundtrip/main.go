// sarama_roundtrip produces three messages with sarama (Debian's 1.22,
// built in GOPATH mode) at a given protocol version and codec to
// partition 0 of a topic, then consumes them back from the first offset
// it got, printing one line per message: "offset key value timestamp-ms"
// (timestamp -1 when the format has none). Any error exits non-zero.
//
//	sarama_roundtrip BROKER TOPIC VERSION CODEC
//	VERSION: 0.8.2.0 (Produce v0, Fetch v0, message format v0) or
//	         0.10.0.0 (Produce v2, Fetch v2, message format v1)
//	CODEC:   none, gzip, snappy or lz4 (lz4 needs 0.10.0.0)
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/Shopify/sarama"
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 5 {
		fail("usage", fmt.Errorf("sarama_roundtrip BROKER TOPIC VERSION CODEC"))
	}
	broker, topic, versionText, codecText := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	version, err := sarama.ParseKafkaVersion(versionText)
	if err != nil {
		fail("version", err)
	}
	codecs := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
	}
	codec, ok := codecs[codecText]
	if !ok {
		fail("codec", fmt.Errorf("unknown codec %q", codecText))
	}

	config := sarama.NewConfig()
	config.Version = version
	config.ClientID = "sarama-roundtrip"
	config.Producer.Return.Successes = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Compression = codec
	config.Producer.Partitioner = sarama.NewManualPartitioner
	// All three in one request, so a codec makes one compressed wrapper.
	config.Producer.Flush.Messages = 3
	config.Producer.Flush.Frequency = time.Second
	config.Metadata.Retry.Backoff = 200 * time.Millisecond

	producer, err := sarama.NewAsyncProducer([]string{broker}, config)
	if err != nil {
		fail("producer", err)
	}
	base := time.Unix(1700000000, 0)
	for i := 0; i < 3; i++ {
		producer.Input() <- &sarama.ProducerMessage{
			Topic:     topic,
			Partition: 0,
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("v%d-%s", i, codecText)),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	first := int64(-1)
	for i := 0; i < 3; i++ {
		select {
		case m := <-producer.Successes():
			if first < 0 || m.Offset < first {
				first = m.Offset
			}
		case e := <-producer.Errors():
			fail("produce", e.Err)
		case <-time.After(20 * time.Second):
			fail("produce", fmt.Errorf("no acknowledgement in 20 s"))
		}
	}
	if err := producer.Close(); err != nil {
		fail("producer close", err)
	}

	consumer, err := sarama.NewConsumer([]string{broker}, config)
	if err != nil {
		fail("consumer", err)
	}
	pc, err := consumer.ConsumePartition(topic, 0, first)
	if err != nil {
		fail("consume", err)
	}
	for i := 0; i < 3; i++ {
		select {
		case m := <-pc.Messages():
			ts := int64(-1)
			if !m.Timestamp.IsZero() && m.Timestamp.Unix() > 0 {
				ts = m.Timestamp.UnixNano() / int64(time.Millisecond)
			}
			fmt.Printf("%d %s %s %d\n", m.Offset, m.Key, m.Value, ts)
		case e := <-pc.Errors():
			fail("consume", e.Err)
		case <-time.After(20 * time.Second):
			fail("consume", fmt.Errorf("no message in 20 s"))
		}
	}
	pc.Close()
	consumer.Close()
}
